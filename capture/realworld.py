"""Ground truth from the libraries people really profile: torch.optim, the caching allocator, torch.compile,
torchvision + DataLoader, HF transformers' generate. Each scenario is a FixWorkload whose variants are
what-if levers, run by capture/fixes.py's harness (5 interleaved profiled windows per variant, each
also timed unprofiled), so the measured.json it writes reads like traces/fixes/measured.json, plus, per
variant, `record` (what the workload measured besides spans: byte ledger, per-token clocks, ...) and
`facts` (counts from the kept trace: graph launches, compiles, cudaFree, ...).

    python -m tracetriage.capture.realworld --out /tmp/rw [--device cpu] [--reps 5] [--only adamw_foreach_off ...]
                                [--smoke] [--drop-lever cuda_graphs] [--merge]
    python -m tracetriage.capture.realworld --summary /tmp/rw [...]     # one line per scenario, both ratios

This module holds the runner and the training-loop scenarios (optimizers, the allocator); compile and
fusion are in realworld_compile, vision in realworld_vision, HF generate in realworld_generate.
Sizes are for an H200 and scale down on the CPU.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch

from tracetriage.analyzers.whatif.levers import CUDA_GRAPHS, FUSED_OPTIMIZER, KEEP_ALLOCATOR_CACHE, REMOVE_SYNCS
from tracetriage.capture import fixes
from tracetriage.capture.fixes import BEFORE, GraphedBody
from tracetriage.capture.realworld_common import RealWorkload, trace_facts
from tracetriage.capture.realworld_compile import COMPILE_SCENARIOS
from tracetriage.capture.realworld_generate import GENERATE_SCENARIOS
from tracetriage.capture.realworld_knobs import KNOB_SCENARIOS
from tracetriage.capture.realworld_knobs3 import KNOB3_SCENARIOS
from tracetriage.capture.realworld_knobs4 import KNOB4_SCENARIOS
from tracetriage.capture.realworld_knobs5 import KNOB5_SCENARIOS
from tracetriage.capture.realworld_loader import LOADER_SCENARIOS
from tracetriage.capture.realworld_vision import VISION_SCENARIOS
from tracetriage.capture.smells import narrow_mlp

# --- optimizers (fused_optimizer) --------------------------------------------------------

@dataclass
class _OptimizerLoop(RealWorkload):
    """A stack of small Linear+LayerNorm blocks (4 parameter tensors each) trained with a per-parameter
    optimizer; the fix is the multi-tensor one. At 128 blocks of width 256: 512 tensors, 256 of them
    256x256 fp32 (256 KiB), the rest 256 floats (1 KiB): each of the per-parameter optimizer's 3-8 kernels
    per tensor is a few µs on the GPU and ~10 µs of host dispatch, so the step is launch-bound. One step a
    window: AdamW's 8 kernels x 512 tensors make ~4,100 launches, ~45k trace events (~0.9 MB gzipped)."""
    levers: ClassVar[tuple[str, ...]] = (FUSED_OPTIMIZER,)
    blocks: int = 128
    width: int = 256
    batch: int = 32
    iters: int = 1
    train: ClassVar[bool] = True     # forward + backward before each step (False: grads given, step only)

    def setup(self):
        blocks, width, batch = (self.blocks, self.width, self.batch) if self.gpu else (12, 32, 4)
        torch.manual_seed(0)
        self.net = narrow_mlp(blocks, width, self.device).train()
        self.x = torch.randn(batch, width, device=self.device)
        params = list(self.net.parameters())
        if not self.train:
            for p in params:
                p.grad = torch.randn_like(p) * 1e-3   # the step's input, made once
        self.opt = self.optimizer(params)
        self.record.update(param_tensors=len(params), param_floats=sum(p.numel() for p in params),
                           optimizer=type(self.opt).__name__, defaults=_plain(self.opt.defaults))
        self.run = self.one_step
        if self.fix == CUDA_GRAPHS:
            # the whole step (forward, backward, optimizer) captured once and replayed, as torch.cuda.graph's
            # "whole network capture" does: grads set to None before the capture live in its memory pool
            self.opt.zero_grad(set_to_none=True)
            self.run = GraphedBody(self.one_step_graphed, self.gpu)

    def one_step_graphed(self):
        if self.train:
            loss = self.net(self.x).square().mean()
            loss.backward()
        self.opt.step()
        return self.net[0].weight

    def optimizer(self, params):
        raise NotImplementedError

    def one_step(self):
        if self.train:
            loss = self.net(self.x).square().mean()
            loss.backward()
        self.opt.step()
        if self.train:
            self.opt.zero_grad()      # set_to_none (the default): no kernels
        return self.net[0].weight

    def step(self):
        return self.run()


@dataclass
class AdamWForeachOff(_OptimizerLoop):
    kind: ClassVar[str] = "adamw_foreach_off"
    levers: ClassVar[tuple[str, ...]] = (FUSED_OPTIMIZER, CUDA_GRAPHS)
    about: ClassVar[str] = ("fwd+bwd of 128 Linear(256)+LayerNorm blocks (512 param tensors) at batch 32, then "
                            "AdamW(foreach=False).step(); fused_optimizer: AdamW(fused=True)")

    def optimizer(self, params):
        fused = self.fix == FUSED_OPTIMIZER
        # (a graphed step needs capturable=True: the step count stays on the device)
        return torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01, foreach=False if not fused else None,
                                 fused=fused or None, capturable=self.fix == CUDA_GRAPHS and self.gpu)


@dataclass
class SGDMomentumLoop(_OptimizerLoop):
    kind: ClassVar[str] = "sgd_momentum_loop"
    levers: ClassVar[tuple[str, ...]] = (FUSED_OPTIMIZER, CUDA_GRAPHS)
    about: ClassVar[str] = ("fwd+bwd of 128 Linear(256)+LayerNorm blocks (512 param tensors) at batch 32, then "
                            "SGD(momentum=0.9, foreach=False).step(); fused_optimizer: SGD(foreach=True)")

    iters: int = 2                   # 3 kernels a tensor: two steps fit the same trace budget

    def optimizer(self, params):
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9, foreach=self.fix == FUSED_OPTIMIZER)


@dataclass
class AdamStepOnly(_OptimizerLoop):
    kind: ClassVar[str] = "adam_step_only"
    about: ClassVar[str] = ("Adam(foreach=False).step() alone over 512 small param tensors (no fwd/bwd); "
                            "fused_optimizer: Adam(fused=True)")
    train: ClassVar[bool] = False

    def optimizer(self, params):
        fused = self.fix == FUSED_OPTIMIZER
        return torch.optim.Adam(params, lr=1e-4, foreach=False if not fused else None, fused=fused or None)


# --- the caching allocator (remove_syncs, keep_allocator_cache) ------------------------------

@dataclass
class EmptyCacheEveryStep(RealWorkload):
    """An inference step over a fresh batch that ends in torch.cuda.empty_cache(): every step hands its
    activation blocks back to the driver (cudaFree, a device-wide sync) and cudaMallocs them again.

    Per step at 2048 tokens x 4096, bf16: the batch is 16 MiB, each of 2 MLP blocks (4096 -> 16384 -> 4096)
    makes a 64 MiB hidden activation and does 2 x 2 x 2048 x 4096 x 16384 = 550 GFLOP (~0.8 ms). Weights
    (4 x 128 MiB) stay allocated. On the CPU empty_cache does nothing (and is not called).
    """
    kind: ClassVar[str] = "empty_cache"
    # one change, priced by both: the syncs (cudaFree) and the allocator's calls go with empty_cache
    levers: ClassVar[tuple[str, ...]] = (REMOVE_SYNCS, KEEP_ALLOCATOR_CACHE)
    about: ClassVar[str] = ("fresh 2048x4096 bf16 batch through 2 MLP blocks (4096->16384->4096) then "
                            "torch.cuda.empty_cache() every step; remove_syncs, keep_allocator_cache: no empty_cache")
    tokens: int = 2048
    dim: int = 4096
    blocks: int = 2
    iters: int = 8

    def setup(self):
        gpu = self.gpu
        self.t, self.d = (self.tokens, self.dim) if gpu else (64, 128)
        self.dtype = torch.bfloat16 if gpu else torch.float32
        torch.manual_seed(0)
        layers = []
        for _ in range(self.blocks):
            layers += [torch.nn.Linear(self.d, 4 * self.d), torch.nn.GELU(), torch.nn.Linear(4 * self.d, self.d)]
        self.net = torch.nn.Sequential(*layers).to(self.device, self.dtype).eval()
        elem = torch.empty((), dtype=self.dtype).element_size()
        self.record.update(batch_bytes=self.t * self.d * elem, hidden_bytes=self.t * 4 * self.d * elem,
                           flops_per_step=self.blocks * 2 * 2 * self.t * self.d * 4 * self.d)

    @torch.no_grad()
    def step(self):
        x = torch.randn(self.t, self.d, device=self.device, dtype=self.dtype)   # a new batch arrives
        y = self.net(x)
        self.out = y.float().mean()         # stays on the device
        del x, y                            # the step's blocks are free before empty_cache returns them
        if self.fix == BEFORE and self.gpu:
            torch.cuda.empty_cache()
        return self.out


@dataclass
class EmptyCacheConvTrain(RealWorkload):
    """A small convolution network's training step (conv-BN-ReLU blocks, SGD) that ends in torch.cuda.empty_cache():
    its activations and their gradients are handed back to the driver every step and cudaMalloc'd again in the next
    (fresh5 fcn_empty_cache at a size that runs in seconds). Batch 32 x 3 x 128 x 128, bf16 autocast on the GPU."""
    kind: ClassVar[str] = "empty_cache_conv_train"
    levers: ClassVar[tuple[str, ...]] = (KEEP_ALLOCATOR_CACHE,)
    about: ClassVar[str] = ("conv-BN-ReLU x 6 training step at batch 32, 128x128, then torch.cuda.empty_cache() "
                            "every step; keep_allocator_cache: no empty_cache")
    batch: int = 32
    size: int = 128
    width: int = 64

    def setup(self):
        torch.manual_seed(0)
        b, hw, w = (self.batch, self.size, self.width) if self.gpu else (2, 16, 8)
        layers, c = [], 3
        for _ in range(6):
            layers += [torch.nn.Conv2d(c, w, 3, padding=1, bias=False), torch.nn.BatchNorm2d(w), torch.nn.ReLU()]
            c = w
        self.net = torch.nn.Sequential(*layers, torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                       torch.nn.Linear(w, 10)).to(self.device)
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.01)
        self.x = torch.randn(b, 3, hw, hw, device=self.device)
        self.y = torch.randint(0, 10, (b,), device=self.device)

    def step(self):
        with torch.autocast("cuda" if self.gpu else "cpu", dtype=torch.bfloat16, enabled=self.gpu):
            loss = torch.nn.functional.cross_entropy(self.net(self.x), self.y)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        if self.fix == BEFORE and self.gpu:
            torch.cuda.empty_cache()
        return loss


@dataclass
class EmptyCacheEncoderInfer(RealWorkload):
    """Transformer encoder inference over batches whose length changes every step (128 to 512 tokens, a cycle of 4),
    each step ending in torch.cuda.empty_cache() "to free the memory of the long batches": every step's
    activations are cudaMalloc'd again. nn.TransformerEncoder, 4 layers of d_model 512, batch 32, bf16."""
    kind: ClassVar[str] = "empty_cache_encoder_infer"
    levers: ClassVar[tuple[str, ...]] = (KEEP_ALLOCATOR_CACHE,)
    about: ClassVar[str] = ("nn.TransformerEncoder (4 x d_model 512) inference at batch 32 over 128..512 tokens, "
                            "then torch.cuda.empty_cache() every step; keep_allocator_cache: no empty_cache")
    batch: int = 32
    dim: int = 512

    def setup(self):
        torch.manual_seed(0)
        d = self.dim if self.gpu else 32
        layer = torch.nn.TransformerEncoderLayer(d, 8 if self.gpu else 2, 4 * d, batch_first=True)
        self.net = torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False).to(self.device).eval()
        lengths = (128, 256, 384, 512) if self.gpu else (4, 8, 12, 16)
        dtype = torch.bfloat16 if self.gpu else torch.float32
        self.net = self.net.to(dtype)
        self.xs = [torch.randn(self.batch if self.gpu else 2, n, d, device=self.device, dtype=dtype)
                   for n in lengths]
        self.i = 0

    @torch.inference_mode()
    def step(self):
        x = self.xs[self.i % len(self.xs)]
        self.i += 1
        out = self.net(x).float().mean()
        if self.fix == BEFORE and self.gpu:
            torch.cuda.empty_cache()
        return out


REALWORLD: dict[str, type[RealWorkload]] = {c.kind: c for c in [
    AdamWForeachOff, SGDMomentumLoop, AdamStepOnly, EmptyCacheEveryStep, EmptyCacheConvTrain, EmptyCacheEncoderInfer,
    *COMPILE_SCENARIOS, *VISION_SCENARIOS, *GENERATE_SCENARIOS, *KNOB_SCENARIOS, *KNOB3_SCENARIOS,
    *LOADER_SCENARIOS, *KNOB4_SCENARIOS, *KNOB5_SCENARIOS,
]}


# --- running -------------------------------------------------------------------------------

def _plain(d: dict) -> dict:
    return {k: v if isinstance(v, (int, float, str, bool, type(None))) else repr(v) for k, v in d.items()}


def _keeping(cls: type[RealWorkload], records: dict, overrides: dict, drop: set[str]) -> type[RealWorkload]:
    """cls, with `overrides` applied to every instance, `drop` levers left out, and each instance's record
    kept in records[fix] (the record only: the model is freed with the workload)."""
    def __post_init__(self):
        for k, v in overrides.items():
            setattr(self, k, v)
        cls.__post_init__(self)
        records[self.fix] = self.record

    levers = tuple(lv for lv in cls.levers if lv not in drop)
    return type(cls.__name__, (cls,), {"levers": levers, "__post_init__": __post_init__,
                                       "__module__": cls.__module__, "__qualname__": cls.__qualname__})


def run(out: Path, *, device: str, reps: int, only: list[str] | None, smoke: bool = False,
        drop: set[str] = frozenset(), merge: bool = False) -> int:
    """Each scenario through fixes.main in turn, its records and trace facts added to measured.json as soon
    as it is done (a run cut short by a time limit keeps what it finished)."""
    measured_path = out / "measured.json"
    failed = []
    for n, kind in enumerate(only or list(REALWORLD)):
        if (merge or n) and measured_path.exists():  # a rerun replaces what was said of this kind, errors too
            old = json.loads(measured_path.read_text())
            old["scenarios"].pop(kind, None)
            old.get("errors", {}).pop(kind, None)
            measured_path.write_text(json.dumps(old, indent=1, default=str))
        records: dict[str, dict] = {}
        cls = _keeping(REALWORLD[kind], records, REALWORLD[kind].smoke if smoke else {}, drop)
        if cls.own_process:
            _in_own_processes(kind, cls, records, out, device=device, reps=reps, smoke=smoke,
                              merge=bool(merge or n))
        else:
            argv = ["--out", str(out), "--device", device, "--reps", str(reps), "--only", kind]
            fixes.main(argv + ["--merge"] * bool(merge or n), scenarios={kind: cls})
        measured = json.loads(measured_path.read_text())
        res = measured["scenarios"].get(kind)
        if res is None or kind in measured.get("errors", {}):
            failed.append(kind)
            continue
        res["smoke"] = smoke
        res["variants"] = {v: {"record": REALWORLD[kind].summarize(rec),
                               "facts": trace_facts(out / f"{kind}--{v}.json.gz")} for v, rec in records.items()}
        measured_path.write_text(json.dumps(measured, indent=1, default=str))
        print(summary_line(kind, res), flush=True)
    return 1 if failed else 0


def _in_own_processes(kind: str, cls: type[RealWorkload], records: dict, out: Path, *, device: str, reps: int,
                      smoke: bool, merge: bool) -> None:
    """One scenario whose variants each run in a child process of their own (`--child`; its reps interleave
    profiled and unprofiled windows as capture_scenario's do, but not with the other variants'), its entry
    added to out/measured.json as fixes.main adds one: a process-wide cache one variant fills cannot serve
    another."""
    from tracetriage.capture.harness import device_info, versions

    measured_path = out / "measured.json"
    result = json.loads(measured_path.read_text()) if merge and measured_path.exists() else {
        "device": device_info(device), "versions": versions(), "reps": reps, "scenarios": {}, "errors": {}}
    result.setdefault("errors", {})
    spans, walls, iters = {}, {}, 0
    for v in [BEFORE, *cls.levers]:
        child = [sys.executable, "-m", "tracetriage.capture.realworld", "--child", kind, v, "--out", str(out),
                 "--device", device, "--reps", str(reps), *(["--smoke"] if smoke else [])]
        done = subprocess.run(child, check=False)
        got = out / f"{kind}--{v}.child.json"
        if done.returncode != 0 or not got.exists():
            result["errors"][kind] = f"variant {v}: its process exited {done.returncode}"
            print(f"[FAIL] {kind}: variant {v}'s process exited {done.returncode}", flush=True)
            break
        doc = json.loads(got.read_text())
        got.unlink()
        spans[v], walls[v], iters, records[v] = doc["spans_us"], doc["walls_ms"], doc["iters"], doc["record"]
    else:
        result["scenarios"][kind] = res = fixes.scenario_result(cls, iters, spans, walls)
        ratios = ", ".join(f"{v} {r['median']:.2f} [{r['p10']:.2f}-{r['p90']:.2f}]" for v, r in res["ratio"].items())
        print(f"[ok] {kind} (a process a variant): before {res['span_us'][BEFORE]['median']:.0f} µs; {ratios}",
              flush=True)
    measured_path.write_text(json.dumps(result, indent=1, default=str))


def child(kind: str, variant: str, out: Path, *, device: str, reps: int, smoke: bool) -> int:
    """`--child KIND VARIANT`: one variant of one scenario measured in this process; its median trace and
    out/KIND--VARIANT.child.json (spans, walls, iters, the workload's record) for the parent to combine."""
    from tracetriage.capture.realworld_common import warm_gpu

    out.mkdir(parents=True, exist_ok=True)
    records: dict[str, dict] = {}
    cls = _keeping(REALWORLD[kind], records, REALWORLD[kind].smoke if smoke else {}, set())
    wl = cls(device=device, fix=variant)
    warm_gpu(device)            # clocks up and cuBLAS loaded, as fixes.main does before its first scenario
    spans, walls = fixes.measure({variant: wl}, out, kind, reps=reps)
    doc = {"spans_us": spans[variant], "walls_ms": walls[variant], "iters": wl.iters, "record": records[variant]}
    (out / f"{kind}--{variant}.child.json").write_text(json.dumps(doc, default=str))
    return 0


# --- reading the results back ------------------------------------------------------------------

def _spread(r) -> str:
    if isinstance(r, (int, float)):          # a measured.json from before wall_ratio had its spread
        return f"{r:.2f}"
    return f"{r['median']:.2f} [{r['p10']:.2f}-{r['p90']:.2f}]"


def summary_line(kind: str, res: dict) -> str:
    """One scenario: the before's span and wall, each lever's profiled and unprofiled after/before ratio (median
    [p10-p90] over every pairing of runs; min and max are in measured.json), the trace facts that show the fix
    is the fix named, and the variants' own measurements."""
    b_span, b_wall = res["span_us"][BEFORE]["median"], res["wall_ms"][BEFORE]["median"]
    parts = [f"{kind}: before {b_span / 1e3:.2f} ms profiled, {b_wall:.2f} ms unprofiled"]
    for lever, r in res["ratio"].items():
        parts.append(f"{lever} profiled {_spread(r)} unprofiled {_spread(res['wall_ratio'][lever])}")
    facts = res.get("variants", {})
    keys = ("graph_launches", "compiles", "cuda_frees", "kernels", "bytes_gz")
    if facts:
        parts.append("facts " + "; ".join(f"{v}: " + " ".join(f"{k}={f['facts'][k]}" for k in keys if f["facts"].get(k))
                                          for v, f in facts.items()))
    highlights, seen = [], set()
    for v, f in facts.items():
        h = _highlight(f.get("record", {}))
        if h and h not in seen:          # a ledger the variants share is said once
            highlights.append(f"{v}: {h}")
            seen.add(h)
    if highlights:
        parts.append("; ".join(highlights))
    line = " | ".join(parts)
    for v, f in facts.items():
        if v == CUDA_GRAPHS and f["facts"].get("graph_launches", 0) == 0 and f["facts"].get("kernels", 0):
            line += f" | WARNING {kind}--cuda_graphs has no cudaGraphLaunch: not a CUDA-graph pair"
    return line


def _highlight(record: dict) -> str:
    """The one measured figure of a variant's record worth a glance: bytes moved, per-token times, DataLoader waits."""
    if "ledger" in record:
        led = record["ledger"]
        return (f"eager {led['eager_bytes'] / 2**20:.1f} MiB in {led['eager_kernels']} ops "
                f"vs fused {led['fused_bytes'] / 2**20:.1f} MiB")
    if "unprofiled_median" in record:
        m, pm = record["unprofiled_median"], record.get("profiled_median", {})
        return (f"ttft {m['ttft_ms']:.1f} ms, per token {m['per_token_ms']:.2f} ms unprofiled "
                f"({pm.get('ttft_ms', float('nan')):.1f} / {pm.get('per_token_ms', float('nan')):.2f} profiled)")
    waits = [w["next_wait_ms"] for w in record.get("windows", []) if "next_wait_ms" in w]
    if waits:
        return f"next() waits {statistics.median(waits):.1f} ms a window (median)"
    return ""


def print_summary(dirs: list[Path]) -> None:
    """Every measured.json under dirs, a line a scenario; then every single trace's truth file, a line each."""
    for d in dirs:
        for m in sorted(d.rglob("measured.json")):
            measured = json.loads(m.read_text())
            print(f"== {m} ({measured.get('device', {}).get('name')}, reps {measured.get('reps')})")
            for kind, res in measured["scenarios"].items():
                print(summary_line(kind, res))
            for kind, err in measured.get("errors", {}).items():
                print(f"[FAIL] {kind}: {err}")
        truths = sorted(d.rglob("*.truth.json"))
        if truths:
            print(f"== {len(truths)} single traces under {d}")
        for t in truths:
            doc = json.loads(t.read_text())
            f = doc["facts"]
            print(f"{doc['trace']}: span {f['span_us'] / 1e3:.1f} ms, {f['kernels']} kernels, "
                  f"{f['graph_launches']} graph launches, {f['graph_captures']} captures, {f['compiles']} compiles, "
                  f"{f['cuda_sync_events']} sync events, {f['bytes_gz'] / 1e3:.0f} KB")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", nargs="*", choices=sorted(REALWORLD))
    ap.add_argument("--smoke", action="store_true", help="each scenario's small settings (a shake-out, not data)")
    ap.add_argument("--drop-lever", nargs="*", default=[], help="leave these variants out")
    ap.add_argument("--merge", action="store_true", help="add to the measured.json already in --out")
    ap.add_argument("--summary", nargs="*", type=Path, help="print the summary of measured.json files and exit")
    ap.add_argument("--child", nargs=2, metavar=("KIND", "VARIANT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        if args.out is None:
            ap.error("--out is required")
        return child(*args.child, args.out, device=args.device, reps=args.reps, smoke=args.smoke)
    if args.summary is not None:
        print_summary(args.summary)
        return 0
    if args.out is None:
        ap.error("--out is required")
    return run(args.out, device=args.device, reps=args.reps, only=args.only, smoke=args.smoke,
               drop=set(args.drop_lever), merge=args.merge)


if __name__ == "__main__":
    sys.exit(main())
