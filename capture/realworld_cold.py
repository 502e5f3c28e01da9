"""Ground truth for the warm_up lever: a script profiled from its very first step, in a fresh process each time.

A child process imports torch, builds one model on the device (the CUDA context is made there, before the
profiler), and runs `steps` training steps. The models (--model):

    resnet18  torchvision ResNet-18, batch 16, 128x128, SGD with momentum (cuDNN convolutions)   warm_up_cold
    mlp       torch only: 8 Linear(2048)+GELU blocks, batch 64, bf16 autocast, AdamW (cuBLAS)   warm_up_cold_mlp
    gpt2      HF transformers GPT-2 from a config (4 layers, 512 wide, random weights), seq 256,  warm_up_cold_gpt2
              batch 8, AdamW: a language-model training step

and the variants:

    before    profiled from step 1: cuBLAS and cuDNN handles, lazy kernel-module loading, the allocator's
              first cudaMallocs and first-call set-up all land inside the trace
    warm_up   `warmup` steps first, unprofiled; then the same `steps` steps, timed and profiled

Each rep is three fresh processes (before profiled, before unprofiled, warm_up timed then profiled), so a
cold start is really cold (resnet18's each a new interpreter, the others forked before any CUDA call: LAUNCH);
for resnet18 one more cold profiled run has CUDA_MODULE_LOADING=EAGER in its environment (every module loaded
at context creation, before the profiler).

    python -m tracetriage.capture.realworld_cold --out /tmp/cold [--model resnet18|mlp|gpt2 ...]
        [--device cpu] [--reps 5]

Output per model: KIND--before.json.gz and KIND--warm_up.json.gz (the median-span runs), for resnet18
warm_up_cold--before-eager-loading.json.gz, and measured.json in tracetriage.capture.fixes' format (one scenario
per model).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULT = "RESULT "
KINDS = {"resnet18": "warm_up_cold", "mlp": "warm_up_cold_mlp", "gpt2": "warm_up_cold_gpt2"}
KIND = KINDS["resnet18"]
ABOUT = {
    "resnet18": "torchvision resnet18 train step (batch 16, 128^2, SGD)",
    "mlp": "torch-only MLP train step (8 Linear(2048)+GELU blocks, batch 64, bf16 autocast, AdamW)",
    "gpt2": "HF transformers GPT-2 train step (4 layers, 512 wide, random weights, batch 8 x 256 tokens, AdamW)",
}


def build(model_name: str, device: str, gpu: bool):
    """The model, its optimizer and one training step's closure; the CUDA context is created here."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.manual_seed(0)
    if model_name == "resnet18":
        from torchvision.models import resnet18

        batch, side = (16, 128) if gpu else (2, 32)
        model = resnet18(num_classes=100).to(device).train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x = torch.randn(batch, 3, side, side, device=device)
        y = torch.randint(0, 100, (batch,), device=device)
        loss_of = lambda: F.cross_entropy(model(x), y)  # noqa: E731
        shape = {"batch": batch, "side": side}
    elif model_name == "mlp":
        width, batch, blocks = (2048, 64, 8) if gpu else (64, 4, 2)
        model = nn.Sequential(*[m for _ in range(blocks) for m in (nn.Linear(width, width), nn.GELU())]).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        x = torch.randn(batch, width, device=device)
        dtype = torch.bfloat16 if gpu else torch.float32

        def loss_of():
            with torch.autocast(device_type=torch.device(device).type, dtype=dtype, enabled=gpu):
                return model(x).float().square().mean()
        shape = {"batch": batch, "width": width, "blocks": blocks}
    elif model_name == "gpt2":
        import transformers

        layers, embd, seq, batch = (4, 512, 256, 8) if gpu else (1, 64, 16, 2)
        cfg = transformers.GPT2Config(n_layer=layers, n_embd=embd, n_head=8, n_positions=max(seq, 64), vocab_size=8192,
                                      bos_token_id=0, eos_token_id=0)
        model = transformers.GPT2LMHeadModel(cfg).to(device).train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        ids = torch.randint(0, cfg.vocab_size, (batch, seq), device=device)
        loss_of = lambda: model(input_ids=ids, labels=ids).loss  # noqa: E731
        shape = {"batch": batch, "seq": seq, "layers": layers, "embd": embd}
    else:
        raise ValueError(f"unknown model {model_name!r}; one of {', '.join(KINDS)}")

    def train_step():
        loss = loss_of()
        loss.backward()
        opt.step()
        opt.zero_grad()
    return train_step, shape


def child(variant: str, device: str, trace: Path | None, steps: int, warmup: int, model_name: str = "resnet18") -> dict:
    """One fresh process's run; prints nothing but its RESULT line on stdout."""
    t_import = time.perf_counter()
    import torch

    gpu = torch.device(device).type == "cuda"
    train_step, shape = build(model_name, device, gpu)
    setup_s = time.perf_counter() - t_import

    def sync():
        if gpu:
            torch.cuda.synchronize()

    def train(n):
        for _ in range(n):
            train_step()
        sync()

    def timed(n):
        sync()
        t0 = time.perf_counter()
        train(n)
        return (time.perf_counter() - t0) * 1e3

    res = {"variant": variant, "pid": os.getpid(), "setup_s": setup_s,
           "module_loading": os.environ.get("CUDA_MODULE_LOADING"),
           "steps": steps, "model": model_name, **shape}
    if variant != "before":         # warm_up (a literal: the cold child imports nothing of ours before torch)
        train(warmup)
        res["wall_ms"] = timed(steps)
    if trace is not None:
        from tracetriage.capture.realworld_common import profile_bare

        run = profile_bare(lambda: train(steps), trace, device=device)
        res["profiled_wall_ms"] = (run["call_end_ns"] - run["call_start_ns"]) / 1e6
    elif variant == "before":
        res["wall_ms"] = timed(steps)
    return res


# How a fresh run starts. "exec": a new interpreter that imports torch itself (~9 s a run on the H200 host, most
# of a rep). "fork": a child of a fork server that imported torch and the model's library but never touched
# CUDA, so the child's CUDA context, cuBLAS/cuDNN handles, kernel-module loading and allocator are as cold as a
# new process's; only the Python imports, which happen before any profiler starts, are skipped. ResNet-18 was
# first captured with exec and keeps it, so its runs stay comparable.
LAUNCH = {"resnet18": "exec", "mlp": "fork", "gpt2": "fork"}
PRELOAD = ("torch", "torch.nn.functional", "torchvision", "transformers", "tracetriage.capture.realworld_common")


def _spawn(variant: str, device: str, trace: Path | None, steps: int, warmup: int, env: dict | None = None,
           timeout: float = 180, model_name: str = "resnet18") -> dict:
    t0 = time.perf_counter()
    if LAUNCH[model_name] == "fork":
        res = _forked(variant, device, trace, steps, warmup, env or {}, timeout, model_name)
    else:
        res = _exec(variant, device, trace, steps, warmup, env or {}, timeout, model_name)
    res["process_s"] = time.perf_counter() - t0
    res["launch"] = LAUNCH[model_name]
    if trace is not None:
        from tracetriage.capture.realworld_common import trace_facts

        res["span_us"] = trace_facts(trace)["span_us"]
    return res


def _forked_child(conn, env: dict, args: tuple) -> None:
    os.environ.update(env)           # before the child's first CUDA call, as a new process's environment would be
    try:
        conn.send(child(*args))
    except BaseException as e:      # the parent raises it with the child's words
        conn.send({"error": f"{type(e).__name__}: {e}"})
    conn.close()


def _forked(variant, device, trace, steps, warmup, env, timeout, model_name) -> dict:
    import importlib.util
    import multiprocessing

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([m for m in PRELOAD if importlib.util.find_spec(m.split(".")[0])])
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_forked_child, args=(send, env, (variant, device, trace, steps, warmup, model_name)))
    proc.start()
    send.close()
    if not recv.poll(timeout):
        proc.kill()
        raise RuntimeError(f"forked child {variant} gave no result in {timeout:.0f} s")
    res = recv.recv()
    proc.join(30)
    if "error" in res:
        raise RuntimeError(f"forked child {variant}: {res['error']}")
    return res


def _exec(variant, device, trace, steps, warmup, env, timeout, model_name) -> dict:
    cmd = ([sys.executable, "-m", "tracetriage.capture.realworld_cold", "--child", variant, "--device", device,
            "--model", model_name, "--steps", str(steps), "--warmup", str(warmup)]
           + (["--trace", str(trace)] if trace else []))
    # the child imports this checkout as the parent did: by the install, or by the links record_realworld.sh puts on
    # PYTHONPATH (tools/pkglink.py); never the repo root, whose folders shadow packages (transformers' `kernels`)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **env})
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith(RESULT)]
    if p.returncode != 0 or not lines:
        raise RuntimeError(f"child {variant} exited {p.returncode}: {p.stderr[-2000:]}")
    return json.loads(lines[-1][len(RESULT):])


def capture_cold(out: Path, *, device: str, reps: int, steps: int = 6, warmup: int = 5,
                 model_name: str = "resnet18") -> dict:
    """`reps` x (before profiled, warm_up timed then profiled, before unprofiled), each a fresh process."""
    from tracetriage.analyzers.whatif.levers import WARM_UP
    from tracetriage.capture.fixes import ratio_spread  # the same summaries as every other measured.json
    from tracetriage.capture.realworld_common import runs_summary

    runs: dict[str, list[dict]] = {"before": [], WARM_UP: []}
    unprofiled: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(reps):
            for v in runs:
                runs[v].append(_spawn(v, device, Path(tmp) / f"{v}-{r}.json.gz", steps, warmup, model_name=model_name))
            unprofiled.append(_spawn("before", device, None, steps, warmup, model_name=model_name))
        for v, rs in runs.items():  # keep the run whose span is the median one
            med = sorted(range(reps), key=lambda i: rs[i]["span_us"])[reps // 2]
            shutil.copy(Path(tmp) / f"{v}-{med}.json.gz", out / f"{KINDS[model_name]}--{v}.json.gz")
    spans = {v: [r["span_us"] for r in rs] for v, rs in runs.items()}
    walls = {"before": [r["wall_ms"] for r in unprofiled], WARM_UP: [r["wall_ms"] for r in runs[WARM_UP]]}
    return {
        "about": (f"{ABOUT[model_name]}, {steps} steps profiled from the first "
                  f"step of a fresh process vs after {warmup} unprofiled warm-up steps; each run its own process"),
        "iters": steps,
        "span_us": {v: runs_summary(s) for v, s in spans.items()},
        "wall_ms": {v: runs_summary(s) for v, s in walls.items()},
        "ratio": {WARM_UP: ratio_spread(spans[WARM_UP], spans["before"])},
        "wall_ratio": {WARM_UP: ratio_spread(walls[WARM_UP], walls["before"])},
        "wall_ratio_median": {WARM_UP: ratio_spread(walls[WARM_UP], walls["before"])["median"]},
        "runs": {"profiled": runs, "unprofiled_before": unprofiled},
    }


def capture_eager_loading(out: Path, *, device: str, steps: int, warmup: int) -> dict:
    """One cold profiled run with CUDA_MODULE_LOADING=EAGER: every kernel module loaded with the context."""
    run = _spawn("before", device, out / f"{KIND}--before-eager-loading.json.gz", steps, warmup,
                 env={"CUDA_MODULE_LOADING": "EAGER"}, timeout=150)
    return {k: run[k] for k in ("span_us", "profiled_wall_ms", "setup_s", "process_s", "module_loading")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--model", nargs="+", choices=list(KINDS), default=["resnet18"], help="one scenario each")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--no-eager-loading", action="store_true", help="skip resnet18's CUDA_MODULE_LOADING=EAGER run")
    ap.add_argument("--smoke", action="store_true", help="1 rep, 3 steps, no eager-loading run: a shake-out")
    ap.add_argument("--child", choices=["before", "warm_up"], help=argparse.SUPPRESS)   # (literals: as in child())
    ap.add_argument("--trace", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        res = child(args.child, args.device, args.trace, args.steps, args.warmup, args.model[0])
        print(RESULT + json.dumps(res), flush=True)
        return 0
    if args.out is None:
        ap.error("--out is required")
    args.out.mkdir(parents=True, exist_ok=True)
    from tracetriage.analyzers.whatif.levers import WARM_UP
    from tracetriage.capture.harness import device_info, versions
    from tracetriage.capture.realworld_common import warm_gpu

    if args.smoke:
        args.reps, args.steps, args.warmup = 1, 3, 2
    warm_gpu(args.device)       # clocks up; the children make their own contexts
    t0 = time.perf_counter()
    path = args.out / "measured.json"
    measured = (json.loads(path.read_text()) if path.exists() else
                {"device": device_info(args.device), "versions": versions(), "reps": args.reps, "scenarios": {},
                 "errors": {}})
    failed = 0
    for model_name in args.model:     # each scenario written as soon as it is measured: a cut run keeps the rest
        kind = KINDS[model_name]
        try:
            measured["scenarios"][kind] = res = capture_cold(args.out, device=args.device, reps=args.reps,
                                                             steps=args.steps, warmup=args.warmup,
                                                             model_name=model_name)
            path.write_text(json.dumps(measured, indent=1))
            r, w = res["ratio"][WARM_UP], res["wall_ratio"][WARM_UP]
            print(f"[ok {time.perf_counter() - t0:5.1f}s] {kind}: "
                  f"before {res['span_us']['before']['median'] / 1e3:.1f} ms; "
                  f"warm_up profiled {r['median']:.2f} [{r['p10']:.2f}-{r['p90']:.2f}] "
                  f"unprofiled {w['median']:.2f} [{w['p10']:.2f}-{w['p90']:.2f}]", flush=True)
            if model_name == "resnet18" and not (args.smoke or args.no_eager_loading):
                res["eager_module_loading"] = eager = capture_eager_loading(args.out, device=args.device,
                                                                            steps=args.steps, warmup=args.warmup)
                path.write_text(json.dumps(measured, indent=1))
                print(f"[ok {time.perf_counter() - t0:5.1f}s] {kind} with CUDA_MODULE_LOADING=EAGER: cold span "
                      f"{eager['span_us'] / 1e3:.1f} ms, process {eager['process_s']:.1f} s", flush=True)
        except Exception as e:
            measured["errors"][kind] = f"{type(e).__name__}: {e}"[:2000]
            path.write_text(json.dumps(measured, indent=1))
            print(f"[FAIL {time.perf_counter() - t0:5.1f}s] {kind}: {type(e).__name__}: {e}", flush=True)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
