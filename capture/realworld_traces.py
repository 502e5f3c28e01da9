"""Single traces with a known answer, for the analyzer's step/phase detection, graph attribution and health check.

    training    12 training steps with no ProfilerStep# and no range of ours; step 7's DataLoader __next__
                sleeps 35 ms (its dataset's __getitem__ stalls): the outlier, its step and why in the truth
    norepeat    a handful of distinct ops, each once: nothing repeats
    decode      tracetriage.capture.gpt's small model decoding 16 tokens three ways: eager; one decode step
                captured with torch.cuda.graph inside the profiled window (after a side-stream warm-up outside it), then
                replayed; torch.compile(mode="reduce-overhead") compiled outside, its graph recorded inside
    health      one small training loop captured five ways: everything on (the reference); on a GPU machine
                but never moved to the GPU (CUDA activity on, no kernels); record_shapes=False; no CUDA sync
                events; CUDA activity off

    python -m tracetriage.capture.realworld_traces --out /tmp/tr [--device cpu] [--only training norepeat decode health]

Each NAME.json.gz has a NAME.truth.json beside it (host clocks are time.perf_counter_ns). On the CPU the
GPU-only parts degrade: the graph captures run eagerly, and the health variants are all CPU captures.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity
from torch.utils.data import DataLoader, Dataset

from tracetriage.capture.realworld_common import (
    profile_bare,
    trace_facts,
    trace_us,
    wall_clock_ms,
    warm_gpu,
    warm_profiler,
    write_json,
)


def _gpu(device: str) -> bool:
    return torch.device(device).type == "cuda"


def _mlp(width: int, depth: int, device: str) -> nn.Module:
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.GELU()]
    return nn.Sequential(*layers, nn.Linear(width, 10)).to(device)


def _save(out: Path, name: str, truth: dict) -> dict:
    truth = {"trace": f"{name}.json.gz", **truth, "facts": trace_facts(out / f"{name}.json.gz")}
    write_json(out / f"{name}.truth.json", truth)
    return truth


# --- a training loop with one outlier step ---------------------------------------------------------

class StallingFeatures(Dataset):
    """Random feature vectors; the first sample of batch `stall_batch` sleeps `stall_ms` (a slow read)."""

    def __init__(self, n: int, width: int, batch: int, stall_batch: int, stall_ms: float):
        self.n, self.width, self.stall_index, self.stall_ms = n, width, stall_batch * batch, stall_ms

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.stall_index:
            time.sleep(self.stall_ms / 1e3)
        g = torch.Generator().manual_seed(i)
        return torch.randn(self.width, generator=g), i % 10


def capture_training(out: Path, device: str, *, steps: int = 12, stall_step: int = 7, stall_ms: float = 35.0) -> dict:
    gpu = _gpu(device)
    width, batch = (1024, 256) if gpu else (64, 8)
    torch.manual_seed(0)
    model = _mlp(width, 4, device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    data = StallingFeatures(steps * batch * 4, width, batch, stall_step, stall_ms)
    loader = DataLoader(data, batch_size=batch, num_workers=0)
    step_ns: list[dict] = []

    def train(n):
        batches = iter(loader)                      # a fresh iterator: batch index = step index
        for i in range(n):
            t0 = time.perf_counter_ns()
            x, y = next(batches)
            t1 = time.perf_counter_ns()
            x, y = x.to(device), y.to(device)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            step_ns.append({"step": i, "next_start_ns": t0, "batch_ready_ns": t1,
                            "step_issued_ns": time.perf_counter_ns(), "next_ms": (t1 - t0) / 1e6})

    data.stall_index = -1               # warm-up: no stall
    train(3)
    data.stall_index = stall_step * batch
    step_ns.clear()
    path = out / "training-outlier.json.gz"
    run = profile_bare(lambda: train(steps), path, device=device)
    run.pop("result")
    for s in step_ns:
        s["next_start_trace_us"], s["batch_ready_trace_us"] = trace_us(path, [s["next_start_ns"], s["batch_ready_ns"]],
                                                                       run)
    return _save(out, "training-outlier", {
        "steps": steps, "outlier_step": stall_step, "stall_ms": stall_ms,
        "why": (f"step {stall_step}'s batch: the DataLoader's __next__ (num_workers=0) calls a __getitem__ that "
                f"sleeps {stall_ms} ms before the step is issued; no other step stalls"),
        "model": f"MLP 4 x Linear({width}) + GELU, AdamW, batch {batch}, fp32", "no_profiler_step": True,
        "no_named_ranges": True, "run": run, "steps_host": step_ns})


# --- no repetition ---------------------------------------------------------------------------------

def capture_norepeat(out: Path, device: str) -> dict:
    """Seven different ops once each: a trace with no step, no loop, nothing to detect a period from."""
    gpu = _gpu(device)
    n = 2048 if gpu else 128
    torch.manual_seed(0)
    a = torch.randn(n, n, device=device)
    img = torch.randn(8, 64, 56, 56, device=device) if gpu else torch.randn(1, 8, 16, 16)
    w = torch.randn(64, 64, 3, 3, device=device) if gpu else torch.randn(8, 8, 3, 3)
    ops = ["matmul", "softmax", "layer_norm", "conv2d", "sort", "topk", "cumsum"]

    def once():
        y = a @ a                                        # 2048^3: 17 GFLOP
        y = torch.softmax(y, dim=-1)
        y = F.layer_norm(y, (n,))
        z = F.conv2d(img, w, padding=1)
        s = torch.sort(y[0]).values
        t = torch.topk(z.flatten(), 16).values
        return (s.cumsum(0)[-1] + t.sum()).float()

    once()                                               # first-call set-up (cuBLAS, cuDNN) outside the trace
    run = profile_bare(once, out / "norepeat.json.gz", device=device)
    run.pop("result")
    return _save(out, "norepeat", {"ops_once": ops, "no_named_ranges": True, "run": run,
                                   "expect": "no repeated step: step/phase detection should find none"})


# --- graph-captured decode -------------------------------------------------------------------------

def capture_decode(out: Path, device: str, *, tokens: int = 16, preset: str | None = None) -> list[dict]:
    from tracetriage.capture.gpt import PrefillDecode

    gpu = _gpu(device)
    preset = preset or ("small" if gpu else "tiny")
    prompt_len = 512 if preset != "tiny" else 32
    docs = []
    for mode in ("eager", "cudagraph", "reduce-overhead"):
        wl = PrefillDecode(device=device, model=preset, mode="graphs" if mode == "reduce-overhead" else "eager",
                           prompt_len=prompt_len, decode_steps=tokens, dtype="bfloat16" if gpu else "float32")
        wl.setup()
        docs.append(_decode_one_way(wl, mode, out, device, tokens))
        del wl
        if gpu:
            torch.cuda.empty_cache()
    return docs


@torch.inference_mode()
def _decode_one_way(wl, mode: str, out: Path, device: str, tokens: int) -> dict:
    gpu = _gpu(device)
    start = wl.prompt_len
    logits = wl.net(wl.prompt, wl.positions[:start])                   # prefill, outside the profiler
    tok = logits[:, -1].argmax(dim=-1, keepdim=True)
    marks: dict[str, int] = {}
    if mode == "eager":
        def run():
            t = tok
            for i in range(tokens):
                wl.pos.fill_(start + i)
                t = wl.decode(t, wl.pos)
            return t
    elif mode == "cudagraph":
        tok_buf, pos_buf = tok.clone(), torch.full((1,), start, dtype=torch.long, device=device)

        def body():                                    # one decode step, its inputs advanced on the device
            nxt = wl._decode_one(tok_buf, pos_buf)
            tok_buf.copy_(nxt)
            pos_buf.add_(1)

        graph = None
        if gpu:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):              # warm-up outside the profiler and the capture
                for _ in range(3):
                    body()
            torch.cuda.current_stream().wait_stream(side)
            pos_buf.fill_(start)
            tok_buf.copy_(tok)

        def run():
            nonlocal graph
            marks["capture_start_ns"] = time.perf_counter_ns()
            if gpu:
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):          # captured inside the window: the launches are in the trace
                    body()
            marks["replay_start_ns"] = time.perf_counter_ns()
            for _ in range(tokens):
                if gpu:
                    graph.replay()
                else:
                    body()
            return tok_buf
    else:  # reduce-overhead: compiled, and its one warm-up run made, outside; the graph is recorded inside
        wl.pos.fill_(start)
        wl.decode(tok, wl.pos).clone()
        if gpu:
            torch.cuda.synchronize()

        def run():
            t = tok
            for i in range(tokens):
                wl.pos.fill_(start + 1 + i)
                t = wl.decode(t, wl.pos).clone()        # graph outputs are overwritten by the next replay
            return t

    name = f"decode-{mode}"
    wall = wall_clock_ms(run, device) if mode == "eager" else None   # graphs would be captured twice: not timed
    res = profile_bare(run, out / f"{name}.json.gz", device=device)
    res.pop("result")
    return _save(out, name, {
        "mode": mode, "model": wl.summary()["model"], "prompt_len": start, "decode_tokens": tokens,
        "on_gpu": gpu, "run": res, "marks": marks, "unprofiled_wall_ms": wall,
        "expect": {"eager": "one launch per kernel, every kernel with its op",
                   "cudagraph": "capture-time launches (cudaStreamBeginCapture .. EndCapture, no kernels) then "
                                f"{tokens} cudaGraphLaunch whose kernels have no op of their own",
                   "reduce-overhead": "Inductor's cudagraph tree records its graph on the first call inside the "
                                      "window, then replays"}[mode]})


# --- health checks -------------------------------------------------------------------------------------

HEALTH = {
    # name: (workload on the GPU?, record_shapes, sync events, CUDA activity)
    "health-reference": (True, True, True, True),
    "health-accidental-cpu": (False, True, True, True),
    "health-no-shapes": (True, False, True, True),
    "health-no-sync-events": (True, True, False, True),
    "health-cuda-activity-off": (True, True, True, False),
}


def capture_health(out: Path, device: str, *, steps: int = 8) -> list[dict]:
    """A small training loop that reads loss.item() each step (a sync), captured with one setting off at a time."""
    gpu = _gpu(device)
    docs = []
    for name, (on_gpu, shapes, sync_events, cuda_activity) in HEALTH.items():
        wl_device = device if on_gpu else "cpu"
        width, batch = (1024, 128) if gpu else (64, 8)       # the accidental CPU run: the same model, on the CPU
        torch.manual_seed(0)
        model = _mlp(width, 3, wl_device)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        x, y = torch.randn(batch, width, device=wl_device), torch.randint(0, 10, (batch,), device=wl_device)
        losses = []

        def train():
            for _ in range(steps):
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                opt.zero_grad()
                losses.append(loss.item())             # device -> host copy and a sync, every step

        train()                                         # warm-up
        wall = wall_clock_ms(train, device)
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu and cuda_activity else [])
        run = profile_bare(train, out / f"{name}.json.gz", device=device, record_shapes=shapes,
                           sync_events=sync_events, activities=acts)
        run.pop("result")
        docs.append(_save(out, name, {
            "workload_device": wl_device, "machine_has_gpu": gpu, "record_shapes": shapes,
            "cuda_sync_events": sync_events and gpu, "cuda_activity": gpu and cuda_activity, "steps": steps,
            "model": f"MLP 3 x Linear({width}) + GELU, AdamW, batch {batch}, loss.item() per step",
            "profiled_ms": (run["call_end_ns"] - run["call_start_ns"]) / 1e6, "unprofiled_ms": wall, "run": run}))
    return docs


PARTS = {"training": capture_training, "norepeat": capture_norepeat, "decode": capture_decode,
         "health": capture_health}
SMOKE = {"training": dict(steps=9), "decode": dict(tokens=4, preset="tiny"), "health": dict(steps=2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--only", nargs="*", choices=sorted(PARTS))
    ap.add_argument("--smoke", action="store_true", help="fewer steps, the tiny GPT: a shake-out, not data")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    warm_gpu(args.device)
    warm_profiler(args.device)
    failed = 0
    for part in args.only or PARTS:
        t0 = time.perf_counter()
        try:
            docs = PARTS[part](args.out, args.device, **(SMOKE.get(part, {}) if args.smoke else {}))
            for d in docs if isinstance(docs, list) else [docs]:
                f = d["facts"]
                print(f"[ok {time.perf_counter() - t0:5.1f}s so far] {d['trace']}: span {f['span_us'] / 1e3:.1f} ms, "
                      f"{f['kernels']} kernels, {f['graph_launches']} graph launches, {f['graph_captures']} captures, "
                      f"{f['cuda_sync_events']} sync events, {f['bytes_gz'] / 1e3:.0f} KB", flush=True)
        except Exception as e:  # one failing part must not cost the others
            import traceback

            failed += 1
            print(f"[FAIL {time.perf_counter() - t0:5.1f}s] {part}: {type(e).__name__}: {e}\n{traceback.format_exc()}",
                  flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
