"""HF transformers generate() ground truth, and traces for the analyzer's prefill/decode phase detection.

Models come from a config with random weights (nothing downloads): a Llama (hidden 1024, 4 layers, 8 heads,
vocab 32000) and GPT-2 (n_embd 768, 4 layers). Greedy generate(max_new_tokens=32) after a 128-token
prompt; EOS is switched off so every call makes exactly 32 tokens. A streamer whose put() copies the token
to the host and reads time.perf_counter_ns() marks when each token is known there (put #0 is the prompt):
the TTFT and per-token truth.

    python -m tracetriage.capture.realworld_generate --out /tmp/gen [--device cpu] [--only llama-b1-static ...]
        [--smoke]

writes generate-FAMILY-bBATCH-MODE.json.gz (one profiled generate() call with no named range and no
ProfilerStep#) and a .truth.json beside each. The paired scenario (hf_llama_generate) runs through
tracetriage.capture.realworld.
"""
from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch

from tracetriage.analyzers.whatif.levers import CUDA_GRAPHS, FUSE
from tracetriage.capture.realworld_common import (
    RealWorkload,
    profile_bare,
    timed_windows,
    trace_facts,
    trace_us,
    wall_clock_ms,
    warm_gpu,
    warm_profiler,
    write_json,
)

# Model sizes on a GPU, and the tiny ones the CPU runs instead. 4 layers, not Llama's 8 or GPT-2's 12: an
# eager decode step records ~250 host ops a layer (views, casts, rotary), and 32 tokens of 8 layers would
# write a ~2.5 MB trace (over the 2 MB cap); 4 layers keep an eager generate() near 1 MB gzipped.
CONFIGS = {
    "llama": dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=4, num_attention_heads=8,
                  num_key_value_heads=8, vocab_size=32000, max_position_embeddings=1024),
    "gpt2": dict(n_embd=768, n_layer=4, n_head=12, vocab_size=50257, n_positions=1024),
}
CPU_CONFIGS = {
    "llama": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=4, vocab_size=512, max_position_embeddings=256),
    "gpt2": dict(n_embd=64, n_layer=2, n_head=4, vocab_size=512, n_positions=256),
}


def hf_model(family: str, device: str, *, layers: int | None = None):
    """A causal LM of `family` with random weights, bf16 on a GPU, eval mode, EOS off (pad token 0)."""
    import transformers

    gpu = torch.device(device).type == "cuda"
    kw = dict((CONFIGS if gpu else CPU_CONFIGS)[family])
    if layers is not None:
        kw["num_hidden_layers" if family == "llama" else "n_layer"] = layers
    config_cls, model_cls = {"llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
                             "gpt2": (transformers.GPT2Config, transformers.GPT2LMHeadModel)}[family]
    config = config_cls(**kw, bos_token_id=None, eos_token_id=None, pad_token_id=0)
    torch.manual_seed(0)
    with torch.device(device):
        model = model_cls(config)
    model = model.to(torch.bfloat16 if gpu else torch.float32).eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model


def token_clock():
    """A transformers streamer recording when each put() value is on the host (put #0: the prompt)."""
    from transformers.generation.streamers import BaseStreamer

    class TokenClock(BaseStreamer):
        def __init__(self):
            self.put_ns: list[int] = []
            self.end_ns: int | None = None

        def put(self, value):
            value.cpu()                 # the token on the host: a copy and a sync when it is on the device
            self.put_ns.append(time.perf_counter_ns())

        def end(self):
            self.end_ns = time.perf_counter_ns()

    return TokenClock()


def token_truth(start_ns: int, clock, end_ns: int) -> dict:
    """TTFT and per-token times, in ms from the host clock, for one generate() call."""
    puts = clock.put_ns
    tokens = puts[1:]
    return {
        "start_ns": start_ns, "put_ns": puts, "end_ns": end_ns,
        "prompt_put_ms": (puts[0] - start_ns) / 1e6 if puts else None,
        "ttft_ms": (tokens[0] - start_ns) / 1e6 if tokens else None,
        "per_token_ms": [(b - a) / 1e6 for a, b in zip(tokens, tokens[1:])],
        "total_ms": (end_ns - start_ns) / 1e6,
        "new_tokens": len(tokens),
    }


def compiled_decode_forward(model):
    """model.forward for generate(): decode steps (one new token) through torch.compile(mode="reduce-overhead"),
    marking a new CUDA-graph step before each so the previous step's outputs may be overwritten (without the
    mark, generate fails with "accessing tensor output of CUDAGraphs that has been overwritten"); the
    prompt's forward stays eager, as transformers' own auto-compile does. On the CPU there are no graphs:
    the compiled code runs as is. functools.wraps keeps forward's signature, which generate() reads (it
    passes logits_to_keep only to a forward that names it)."""
    eager = model.forward
    compiled = torch.compile(eager, mode="reduce-overhead")

    @functools.wraps(eager)
    def forward(*args, input_ids=None, **kwargs):
        if input_ids is None or input_ids.shape[1] != 1:
            return eager(*args, input_ids=input_ids, **kwargs)
        torch.compiler.cudagraph_mark_step_begin()
        return compiled(*args, input_ids=input_ids, **kwargs)

    return forward


def generate_kwargs(mode: str, gpu: bool, new_tokens: int) -> dict:
    """eager: the dynamic cache. static: cache_implementation="static", which makes transformers compile its
    decode step (on a GPU by itself; on the CPU only when asked, which the CPU runs do to test that path).
    graphs: transformers' compile off, model.forward a compiled_decode_forward; the caller passes a StaticCache
    it made once (past_key_values), so the graphs' static inputs keep their addresses from call to call."""
    kw = dict(max_new_tokens=new_tokens, do_sample=False)
    if mode == "static":
        kw["cache_implementation"] = "static"
    if mode == "static" and not gpu:
        from transformers import CompileConfig

        cc = CompileConfig()
        cc._compile_all_devices = True
        kw["compile_config"] = cc
    if mode == "graphs":
        kw["disable_compile"] = True
    return kw


@dataclass
class HFLlamaGenerate(RealWorkload):
    """One greedy generate() of 32 tokens after a 128-token prompt per iteration, Llama 4x1024 bf16 batch 1.

    before: eager, dynamic cache. fuse: cache_implementation="static" (transformers compiles the decode
    step with mode="reduce-overhead"; Inductor may skip its CUDA graphs, so the kept trace's
    facts.graph_launches says whether this pair is fusion alone; generate() makes a new StaticCache per
    call). cuda_graphs: one StaticCache made in setup and reset per call, transformers' compile off, the
    decode forward compiled by hand with reduce-overhead and cudagraph_mark_step_begin() per step
    (facts.graph_launches and graph_captures again say whether graphs ran, and were recorded in the window).
    """
    kind: ClassVar[str] = "hf_llama_generate"
    levers: ClassVar[tuple[str, ...]] = (FUSE, CUDA_GRAPHS)
    needs: ClassVar[tuple[str, ...]] = ("transformers",)
    about: ClassVar[str] = ("HF Llama (hidden 1024, 4 layers, 8 heads, vocab 32000, bf16, random weights) greedy "
                            "generate of 32 tokens after 128 at batch 1: eager dynamic cache; fuse: static cache "
                            "(transformers' auto-compile); cuda_graphs: static cache + decode forward compiled "
                            "with reduce-overhead by hand")
    family: str = "llama"
    prompt_len: int = 128
    new_tokens: int = 32
    batch: int = 1
    layers: int | None = None        # None: CONFIGS' count
    iters: int = 1
    smoke: ClassVar[dict] = {"iters": 1, "new_tokens": 8, "layers": 1}

    def setup(self):
        self.model = hf_model(self.family, self.device, layers=self.layers)
        prompt_len = self.prompt_len if self.gpu else 16
        vocab = self.model.config.vocab_size
        g = torch.Generator().manual_seed(0)
        self.prompt = torch.randint(0, vocab, (self.batch, prompt_len), generator=g).to(self.device)
        self.mode = {"before": "eager", FUSE: "static", CUDA_GRAPHS: "graphs"}[self.fix]
        self.kwargs = generate_kwargs(self.mode, self.gpu, self.new_tokens)
        self.cache = None
        if self.mode == "graphs":
            from transformers import StaticCache

            self.model.forward = compiled_decode_forward(self.model)
            self.cache = StaticCache(config=self.model.config, max_cache_len=prompt_len + self.new_tokens)
            self.record["cache"] = "one StaticCache made in setup, reset before each generate() call"
        self.record.update(model=self.model.config.to_diff_dict(), prompt=list(self.prompt.shape),
                           generate_kwargs={k: repr(v) for k, v in self.kwargs.items()})
        if self.cache is not None:
            self.kwargs["past_key_values"] = self.cache

    def step(self):
        clock = token_clock()
        t0 = time.perf_counter_ns()
        if self.cache is not None:
            self.cache.reset()              # zero the K/V in place: the same tensors, a fresh sequence
        out = self.model.generate(self.prompt, attention_mask=torch.ones_like(self.prompt), streamer=clock,
                                  **self.kwargs)
        self.calls.append(token_truth(t0, clock, time.perf_counter_ns()))
        return out

    def window(self):
        self.calls = []
        super().window()
        self.note_window(calls=self.calls)

    @classmethod
    def summarize(cls, record: dict) -> dict:
        """Median TTFT and per-token time over the profiled windows and over the unprofiled timed ones."""
        prof, wall = timed_windows(record.get("windows", []))
        for name, ws in (("profiled", prof), ("unprofiled", wall)):
            calls = [c for w in ws for c in w["calls"]]
            if calls:
                record[f"{name}_median"] = {
                    "ttft_ms": statistics.median(c["ttft_ms"] for c in calls),
                    "per_token_ms": statistics.median(t for c in calls for t in c["per_token_ms"]),
                    "calls": len(calls)}
        return record


GENERATE_SCENARIOS = [HFLlamaGenerate]


# --- bare traces for phase detection ---------------------------------------------------------------

TRACES = [f"{fam}-b{b}-{mode}" for fam in ("gpt2", "llama") for b in (1, 8) for mode in ("eager", "static")]
SMOKE_TRACES = ["llama-b1-eager"]      # the bare-profile path; static's compile is shaken out by the pairs


def capture_generate_trace(model, family: str, batch: int, mode: str, out: Path, *, device: str,
                           prompt_len: int, new_tokens: int, warmups: int = 2) -> dict:
    """Warm-up calls (compile, caches), an unprofiled timed call, then one profiled generate() with no ranges."""
    gpu = torch.device(device).type == "cuda"
    vocab = model.config.vocab_size
    g = torch.Generator().manual_seed(batch)
    prompt = torch.randint(0, vocab, (batch, prompt_len), generator=g).to(device)
    kw = generate_kwargs(mode, gpu, new_tokens)
    name = f"generate-{family}-b{batch}-{mode}"

    def call():
        clock = token_clock()
        t0 = time.perf_counter_ns()
        model.generate(prompt, attention_mask=torch.ones_like(prompt), streamer=clock, **kw)   # under no_grad
        return token_truth(t0, clock, time.perf_counter_ns())

    t0 = time.perf_counter()
    for _ in range(warmups):
        call()
    warm_s = time.perf_counter() - t0
    unprof = []
    wall_ms = wall_clock_ms(lambda: unprof.append(call()), device)
    path = out / f"{name}.json.gz"
    run = profile_bare(call, path, device=device)
    truth = run.pop("result")
    truth_doc = {
        "trace": path.name, "family": family, "batch": batch, "mode": mode, "prompt_len": prompt_len,
        "new_tokens": new_tokens, "generate_kwargs": {k: repr(v) for k, v in kw.items()},
        "phases": {"prefill": f"one forward over {prompt_len} tokens x batch {batch}, until put #1",
                   "decode": f"{new_tokens - 1} one-token forwards, one per later put"},
        "profiled": truth, "unprofiled": unprof[0], "unprofiled_wall_ms": wall_ms, "warmup_s": warm_s,
        "clock": "time.perf_counter_ns; put_trace_us: the profiled puts as trace ts (µs)",
        "put_trace_us": trace_us(path, truth["put_ns"], run),
        "start_trace_us": trace_us(path, [truth["start_ns"]], run)[0],
        "run": run,
        "facts": trace_facts(path), "no_named_ranges": True,
    }
    write_json(out / f"{name}.truth.json", truth_doc)
    return truth_doc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="profiled HF generate() calls with no named ranges, for phase detection")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--only", nargs="*", choices=TRACES)
    ap.add_argument("--smoke", action="store_true",
                    help="one eager trace, 8 new tokens, 1 layer: a shake-out, not data")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    warm_gpu(args.device)
    warm_profiler(args.device)
    gpu = torch.device(args.device).type == "cuda"
    prompt_len, new_tokens = (128 if gpu else 16), (8 if args.smoke else 32)
    failed = 0
    models = {}
    for name in args.only or (SMOKE_TRACES if args.smoke else TRACES):
        family, b, mode = name.split("-")
        t0 = time.perf_counter()
        try:
            if family not in models:
                models.clear()                                   # one model alive at a time
                models[family] = hf_model(family, args.device, layers=1 if args.smoke else None)
            doc = capture_generate_trace(models[family], family, int(b[1:]), mode, args.out, device=args.device,
                                         prompt_len=prompt_len, new_tokens=new_tokens)
            p = doc["profiled"]
            print(f"[ok {time.perf_counter() - t0:5.1f}s] generate-{name}: ttft {p['ttft_ms']:.1f} ms, per token "
                  f"{statistics.median(p['per_token_ms']):.2f} ms profiled; unprofiled ttft "
                  f"{doc['unprofiled']['ttft_ms']:.1f} ms, "
                  f"per token {statistics.median(doc['unprofiled']['per_token_ms']):.2f} ms; "
                  f"graph_launches {doc['facts']['graph_launches']}, compiles in trace {doc['facts']['compiles']}, "
                  f"{doc['facts']['bytes_gz'] / 1e3:.0f} KB", flush=True)
        except Exception as e:  # one failing trace must not cost the others
            import traceback

            failed += 1
            print(f"[FAIL {time.perf_counter() - t0:5.1f}s] generate-{name}: {type(e).__name__}: {e}\n"
                  f"{traceback.format_exc()}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
