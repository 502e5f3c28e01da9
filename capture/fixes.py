"""Ground truth for `tracetriage whatif`: workloads captured before and after a fix is really made.

Each scenario is one workload class with a `fix` field: "before" runs the code as a student wrote
it, and each lever it lists runs the same loop with that fix made in code, as the lever's spec says
(tracetriage.analyzers.whatif.levers: `python -m tracetriage.capture.fixes --levers` prints each lever's fix).

A profiled window is `iters` iterations and a device synchronize, inside a named range. The
profiler runs one warm-up cycle first (CUPTI's buffer set-up stays out of the window). Every
variant is profiled `reps` times, interleaved with the other variants of its scenario so drift
hits all of them alike; the span of each run is computed from the exported JSON alone (the
device machine has no msgspec), with the same rule as tracetriage.analyzers.whatif's baseline span.

    python -m tracetriage.capture.fixes --out /tmp/fixes [--device cpu] [--reps 5] [--only item_python ...]

Output: SCENARIO--VARIANT.json.gz (the run with the median span of each variant) and
measured.json (every span, the medians, and the after/before ratios with their spread).
Sizes are for an H200 and scale down on the CPU.
"""
from __future__ import annotations

import argparse
import gzip
import json
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile, schedule

from tracetriage.analyzers.model.span import span_of_events
from tracetriage.analyzers.whatif.levers import (
    ASYNC_COPIES,
    AWAITING_PAIR,
    CUDA_GRAPHS,
    KERNELS_2X,
    LEVERS,
    NO_HOST_WORK,
    REMOVE_SYNCS,
)
from tracetriage.capture.ranges import named_range
from tracetriage.capture.smells import narrow_mlp
from tracetriage.capture.workload import Workload

BEFORE = "before"
WINDOW = "fix_window"


def _gpu(device: str) -> bool:
    return torch.device(device).type == "cuda"


def python_work(n: int) -> int:
    """Pure-Python work the profiler does not see: about 50 ns per step on a server core."""
    total = 0
    for i in range(n):
        total += (i * i) % 7
    return total


@dataclass
class FixWorkload(Workload):
    """One iteration in step(); `fix` picks the variant. Subclasses list the levers they model."""
    fix: str = BEFORE
    iters: int = 8
    levers: ClassVar[tuple[str, ...]] = ()
    about: ClassVar[str] = ""
    # Each variant measured in a process of its own (capture/realworld.py): for a knob whose effect a process-wide
    # cache would carry over to the other variants (cuDNN's plan cache is keyed without the benchmark flag).
    own_process: ClassVar[bool] = False

    def __post_init__(self):
        unknown = [lv for lv in self.levers if lv not in LEVERS and lv not in AWAITING_PAIR]
        if unknown:
            raise ValueError(f"{self.kind} lists {unknown[0]!r}, which is no lever of "
                             f"tracetriage.analyzers.whatif.levers (nor a knob awaiting its pair)")
        if self.fix != BEFORE and self.fix not in self.levers:
            raise ValueError(f"{self.kind} has no {self.fix!r} variant; it has: {', '.join(self.levers)}")

    @property
    def gpu(self) -> bool:
        return _gpu(self.device)

    def before_window(self) -> None:
        """Runs before every window, outside the profiler and the timer. A scenario whose windows must each
        start afresh (torch._dynamo.reset(), a new DataLoader iterator) does it here; most do nothing."""

    def window(self) -> None:
        for _ in range(self.iters):
            with named_range("iteration"):
                self.step()
        self.sync()

    def square_operands(self, cpu_dim: int, dtype=torch.bfloat16) -> None:
        """a and b, dim x dim (cpu_dim on the CPU), and k: the K that kernels_2x halves."""
        d = self.dim if self.gpu else cpu_dim
        dt = dtype if self.gpu else torch.float32
        self.a = torch.randn(d, d, device=self.device, dtype=dt) / d ** 0.5
        self.b = torch.randn(d, d, device=self.device, dtype=dt) / d ** 0.5
        self.k = d // 2 if self.fix == KERNELS_2X else d

    def matmul_chain(self, n: int):
        y = self.a
        for _ in range(n):
            y = y[:, : self.k] @ self.b[: self.k]   # half K under kernels_2x: half the FLOPs, same output shape
        return y


class GraphedBody:
    """The cuda_graphs fix: body() captured once and replayed (on the CPU: called, no graphs there)."""

    def __init__(self, body, gpu: bool):
        self.body = body
        self.graph = None
        if gpu:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):   # warm-up outside the capture, as torch.cuda.graphs asks
                for _ in range(3):
                    body()
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.out = body()

    def __call__(self):
        if self.graph is None:
            return self.body()
        self.graph.replay()
        return self.out


# --- syncs ---------------------------------------------------------------------------

@dataclass
class ItemThenPython(FixWorkload):
    """The issue's loop: 0.5 ms of bf16 matmuls, .item() on the loss, then ~0.15 ms of Python.

    (3,000 steps of python_work take 0.155 ms alone on the H200's host, and ~0.4 ms inside this loop,
    right after the thread wakes from the sync's wait.)
    """
    kind: ClassVar[str] = "item_python"
    levers: ClassVar[tuple[str, ...]] = (REMOVE_SYNCS, NO_HOST_WORK, KERNELS_2X)
    about: ClassVar[str] = "compute-bound loop that reads .item() then does ~0.15 ms of Python"
    dim: int = 4096
    matmuls: int = 3
    python_steps: int = 3000

    def setup(self):
        self.square_operands(cpu_dim=128)

    def step(self):
        y = self.matmul_chain(self.matmuls)
        loss = y.float().sum()
        if self.fix == REMOVE_SYNCS:
            self.stop = loss > 1e30                 # stays on the device
        elif loss.item() > 1e30:                    # device->host copy + sync, every iteration
            self.stop = True
        if self.fix != NO_HOST_WORK:
            self.bookkeeping = python_work(self.python_steps)
        return y


@dataclass
class ItemThenShortPython(ItemThenPython):
    """The same loop with a third of the Python: 1,100 steps, 0.05 ms alone on the H200's host."""
    kind: ClassVar[str] = "item_python_short"
    about: ClassVar[str] = "compute-bound loop that reads .item() then does ~0.05 ms of Python"
    python_steps: int = 1100


@dataclass
class MaskSelect(FixWorkload):
    """Boolean-mask selection after the matmuls: nonzero syncs to learn the result's size."""
    kind: ClassVar[str] = "mask_select"
    levers: ClassVar[tuple[str, ...]] = (REMOVE_SYNCS,)
    about: ClassVar[str] = "y[y > t].sum() after two matmuls (nonzero sync) vs torch.where"
    dim: int = 4096

    def setup(self):
        d = self.dim if self.gpu else 128
        dt = torch.bfloat16 if self.gpu else torch.float32
        self.x = torch.randn(d, d, device=self.device, dtype=dt) / d ** 0.5
        self.w = torch.randn(d, d, device=self.device, dtype=dt) / d ** 0.5

    def step(self):
        y = torch.tanh(torch.tanh(self.x @ self.w) @ self.w)
        if self.fix == REMOVE_SYNCS:
            self.total = torch.where(y > 0.01, y, 0).sum()   # same value, no size to learn
        else:
            self.total = y[y > 0.01].sum()                   # nonzero: the host waits for the size
        return y


@dataclass
class TimedOps(FixWorkload):
    """Per-op timing with host clocks: torch.cuda.synchronize() after each of 6 matmuls."""
    kind: ClassVar[str] = "timed_ops"
    levers: ClassVar[tuple[str, ...]] = (REMOVE_SYNCS,)
    about: ClassVar[str] = "torch.cuda.synchronize() after each 2048^3 matmul to time it with host clocks"
    dim: int = 2048
    ops: int = 6

    def setup(self):
        d = self.dim if self.gpu else 96
        dt = torch.bfloat16 if self.gpu else torch.float32
        self.a = torch.randn(d, d, device=self.device, dtype=dt) / d ** 0.5
        self.b = torch.randn(d, d, device=self.device, dtype=dt) / d ** 0.5

    def step(self):
        y = self.a
        self.times = []
        for _ in range(self.ops):
            t0 = time.perf_counter()
            y = torch.relu(y @ self.b)
            if self.fix != REMOVE_SYNCS and self.gpu:
                torch.cuda.synchronize()
            self.times.append(time.perf_counter() - t0)
        return y


@dataclass
class SoftmaxTolist(FixWorkload):
    """Memory-bound softmax over 128 MB, then .tolist() of the first row's argmaxes for logging."""
    kind: ClassVar[str] = "softmax_tolist"
    levers: ClassVar[tuple[str, ...]] = (REMOVE_SYNCS,)
    about: ClassVar[str] = "softmax of 4096x8192 fp32 then .tolist() of 16 argmaxes every iteration"
    rows: int = 4096
    cols: int = 8192

    def setup(self):
        r, c = (self.rows, self.cols) if self.gpu else (64, 256)
        self.x = torch.randn(r, c, device=self.device)

    def step(self):
        p = torch.softmax(self.x * 0.5, dim=1)
        top = p.argmax(dim=1)[:16]
        if self.fix == REMOVE_SYNCS:
            self.top = top                 # read once, after the loop
        else:
            self.top = top.tolist()        # D2H + sync every iteration
        return p


# --- host work -------------------------------------------------------------------------

@dataclass
class HostNumpyPrep(FixWorkload):
    """numpy preprocessing on the critical path before one bf16 matmul: the host is the bottleneck."""
    kind: ClassVar[str] = "host_numpy"
    levers: ClassVar[tuple[str, ...]] = (NO_HOST_WORK, KERNELS_2X)
    about: ClassVar[str] = "numpy sort of 100k floats before each 4096^3 matmul pair, no sync"
    host_elems: int = 100_000
    dim: int = 4096
    matmuls: int = 2

    def setup(self):
        self.rng = np.random.default_rng(0)
        self.square_operands(cpu_dim=128)

    def step(self):
        if self.fix != NO_HOST_WORK:
            v = self.rng.standard_normal(self.host_elems if self.gpu else 1000)
            v.sort()
            self.stat = float(np.cumsum(v)[-1])
        y = self.matmul_chain(self.matmuls)
        return y


@dataclass
class SleepAhead(FixWorkload):
    """A 0.3 ms blocking wait per iteration, but no sync: the host runs ahead of 0.7 ms of matmuls."""
    kind: ClassVar[str] = "sleep_ahead"
    levers: ClassVar[tuple[str, ...]] = (NO_HOST_WORK, KERNELS_2X)
    about: ClassVar[str] = "time.sleep(0.3 ms) per iteration in front of 4 queued 4096^3 matmuls (GPU-bound)"
    sleep_ms: float = 0.3
    dim: int = 4096
    matmuls: int = 4

    def setup(self):
        self.square_operands(cpu_dim=128)

    def step(self):
        if self.fix != NO_HOST_WORK:
            time.sleep(self.sleep_ms / 1e3)
        y = self.matmul_chain(self.matmuls)
        return y


@dataclass
class CpuAugment(FixWorkload):
    """CPU-tensor augmentation of an image batch in the main process, then a copy and two matmuls."""
    kind: ClassVar[str] = "cpu_augment"
    levers: ClassVar[tuple[str, ...]] = (NO_HOST_WORK,)
    about: ClassVar[str] = "flip + normalise a 4x3x256x256 CPU batch each iteration before the GPU phase"
    images: int = 4
    side: int = 256
    dim: int = 4096

    def setup(self):
        s = self.side if self.gpu else 32
        self.batch = torch.rand(self.images, 3, s, s)
        self.ready = self._augment(self.batch)       # the fix: augmented ahead of time, elsewhere
        d = self.dim if self.gpu else 128
        dt = torch.bfloat16 if self.gpu else torch.float32
        self.w = torch.randn(d, d, device=self.device, dtype=dt) / d ** 0.5

    @staticmethod
    def _augment(x):
        x = torch.flip(x, dims=[3])
        x = (x - x.mean(dim=(2, 3), keepdim=True)) / (x.std(dim=(2, 3), keepdim=True) + 1e-6)
        return x.clamp_(-3, 3)

    def step(self):
        x = self.ready if self.fix == NO_HOST_WORK else self._augment(self.batch)
        xd = x.to(self.device)
        y = self.w @ self.w
        y = y @ self.w
        self.out = (y.float().mean() + xd.mean())
        return y


# --- launch overhead (cuda_graphs) -----------------------------------------------------

@dataclass
class _Graphable(FixWorkload):
    """Subclasses write body() over static tensors; the cuda_graphs variant replays its capture."""

    def setup(self):
        self.make()
        self.run = GraphedBody(self.body, self.gpu) if self.fix == CUDA_GRAPHS else self.body

    def step(self):
        return self.run()


@dataclass
class TinyOps(_Graphable):
    kind: ClassVar[str] = "tiny_ops"
    levers: ClassVar[tuple[str, ...]] = (CUDA_GRAPHS, KERNELS_2X)
    about: ClassVar[str] = "100 elementwise ops on 16 KB per iteration (kernels_2x: on 8 KB)"
    n: int = 4096
    ops: int = 100
    iters: int = 5

    def make(self):
        n = self.n // 2 if self.fix == KERNELS_2X else self.n
        self.x = torch.randn(n, device=self.device)

    def body(self):
        x = self.x
        for _ in range(self.ops // 2):
            x = x * 1.0001
            x = x + 0.0001
        return x


@dataclass
class SmallMLP(_Graphable):
    kind: ClassVar[str] = "small_mlp"
    levers: ClassVar[tuple[str, ...]] = (CUDA_GRAPHS,)
    about: ClassVar[str] = "16-layer width-256 MLP (Linear+LayerNorm+GELU) at batch 8, inference"
    depth: int = 16
    width: int = 256
    batch: int = 8

    def make(self):
        self.net = narrow_mlp(self.depth, self.width, self.device)
        self.x = torch.randn(self.batch, self.width, device=self.device)

    @torch.inference_mode()
    def body(self):
        return self.net(self.x)

    def setup(self):
        self.make()
        if self.fix == CUDA_GRAPHS:
            with torch.inference_mode():
                self.run = GraphedBody(self.body, self.gpu)
        else:
            self.run = self.body


@dataclass
class PerParamSGD(_Graphable):
    kind: ClassVar[str] = "per_param_sgd"
    levers: ClassVar[tuple[str, ...]] = (CUDA_GRAPHS,)
    about: ClassVar[str] = "hand-written momentum SGD over 80 parameters of 16 KB, 3 launches each"
    n_params: int = 80
    numel: int = 4096
    iters: int = 5

    def make(self):
        self.p = [torch.randn(self.numel, device=self.device) for _ in range(self.n_params)]
        self.g = [torch.randn_like(t) for t in self.p]
        self.m = [torch.zeros_like(t) for t in self.p]

    @torch.no_grad()
    def body(self):
        for p, g, m in zip(self.p, self.g, self.m):
            m.mul_(0.9).add_(g)
            p.add_(m, alpha=-1e-3)
        return self.p[0]


@dataclass
class MidOps(_Graphable):
    """40 elementwise ops on 8M floats: ~20 µs kernels, longer than their launches (GPU-bound)."""
    kind: ClassVar[str] = "mid_ops"
    levers: ClassVar[tuple[str, ...]] = (CUDA_GRAPHS, KERNELS_2X)
    about: ClassVar[str] = "40 elementwise ops on 32 MB per iteration (kernels_2x: on 16 MB)"
    n: int = 1 << 23
    ops: int = 40
    iters: int = 5

    def make(self):
        n = self.n if self.gpu else 1 << 12
        n = n // 2 if self.fix == KERNELS_2X else n
        self.x = torch.randn(n, device=self.device)

    def body(self):
        x = self.x
        for _ in range(self.ops // 2):
            x = x * 1.0001
            x = x + 0.0001
        return x


@dataclass
class MatmulLoop(_Graphable):
    kind: ClassVar[str] = "matmul_loop"
    levers: ClassVar[tuple[str, ...]] = (CUDA_GRAPHS, KERNELS_2X)
    about: ClassVar[str] = "6 bf16 4096^3 matmuls per iteration, no sync: GPU-bound"
    dim: int = 4096
    matmuls: int = 6

    def make(self):
        self.square_operands(cpu_dim=128)

    def body(self):
        y = self.matmul_chain(self.matmuls)
        return y


@dataclass
class SmallMatmulLoop(MatmulLoop):
    kind: ClassVar[str] = "small_matmul_loop"
    about: ClassVar[str] = "30 fp32 256^3 matmuls per iteration: launch-bound"
    dim: int = 256
    matmuls: int = 30
    iters: int = 5

    def make(self):
        self.square_operands(cpu_dim=64, dtype=torch.float32)


# --- transfers (async_copies) ------------------------------------------------------------

@dataclass
class _Batches(FixWorkload):
    """A fresh host batch per iteration, copied to the device and consumed by bf16 matmuls.

    before: pageable memory, a blocking .to(device) on the compute stream. async_copies: pinned
    buffers, copied non_blocking on a side stream one iteration ahead, the compute stream waiting
    on the copy's event (the prefetch pattern of smells.HealthyOverlap).
    """
    mbytes: int = 32
    dim: int = 4096
    matmuls: int = 3
    batches: int = 2

    def setup(self):
        gpu = self.gpu
        self.d = self.dim if gpu else 128
        elems = (self.mbytes << 20) // 2 if gpu else self.d * self.d   # bf16: 2 bytes
        self.rows = elems // self.d
        dt = torch.bfloat16 if gpu else torch.float32
        pin = gpu and self.fix == ASYNC_COPIES
        self.host = [torch.randn(elems, dtype=dt) for _ in range(self.batches)]
        if pin:
            self.host = [h.pin_memory() for h in self.host]
        self.w = torch.randn(self.d, self.d, device=self.device, dtype=dt) / self.d ** 0.5
        self.k = self.d // 2 if self.fix == KERNELS_2X else self.d
        self.copy_stream = torch.cuda.Stream() if pin else None
        self.i = 0
        self.pending = None

    def _load(self, h):
        if self.copy_stream is None:
            return h.to(self.device), None
        with torch.cuda.stream(self.copy_stream):
            x = h.to(self.device, non_blocking=True)
            ev = torch.cuda.Event()
            ev.record(self.copy_stream)
        return x, ev

    def step(self):
        h = self.host[self.i % self.batches]
        self.i += 1
        if self.copy_stream is None:
            x, ready = self._load(h)
        else:
            x, ready = self.pending if self.pending is not None else self._load(h)
            self.pending = self._load(self.host[self.i % self.batches])   # next batch, overlapped
            torch.cuda.current_stream().wait_event(ready)
            x.record_stream(torch.cuda.current_stream())
        y = x.view(self.rows, self.d)
        for _ in range(self.matmuls):
            y = y[:, : self.k] @ self.w[: self.k]
        return y

    def window(self):
        super().window()
        self.pending = None     # each window starts cold, like the before variant


@dataclass
class PageableBatches(_Batches):
    kind: ClassVar[str] = "pageable_batches"
    levers: ClassVar[tuple[str, ...]] = (ASYNC_COPIES, KERNELS_2X)
    about: ClassVar[str] = "32 MB pageable batch per iteration, then 3 bf16 4096^3 matmuls"


@dataclass
class PageableBalanced(_Batches):
    kind: ClassVar[str] = "pageable_balanced"
    levers: ClassVar[tuple[str, ...]] = (ASYNC_COPIES,)
    about: ClassVar[str] = "8 MB pageable batch per iteration, then 12 bf16 1024x4096x4096 matmuls"
    mbytes: int = 8
    matmuls: int = 12


@dataclass
class SmallBatchesMany(_Batches):
    kind: ClassVar[str] = "pageable_many"
    levers: ClassVar[tuple[str, ...]] = (ASYNC_COPIES,)
    about: ClassVar[str] = "4 pageable 32 MB batches per iteration, one bf16 4096^3 matmul on each"
    mbytes: int = 32
    matmuls: int = 1
    batches: int = 4

    def step(self):
        y = None
        for _ in range(self.batches):
            y = super().step()
        return y


SCENARIOS: dict[str, type[FixWorkload]] = {c.kind: c for c in [
    ItemThenPython, ItemThenShortPython, MaskSelect, TimedOps, SoftmaxTolist,
    HostNumpyPrep, SleepAhead, CpuAugment,
    TinyOps, SmallMLP, PerParamSGD, MidOps, MatmulLoop, SmallMatmulLoop,
    PageableBatches, PageableBalanced, SmallBatchesMany,
]}


def variants(kind: str) -> list[str]:
    return [BEFORE, *SCENARIOS[kind].levers]


# --- measuring ---------------------------------------------------------------------------

def span_us(trace: dict) -> float:
    """The span of an exported trace in µs, by the one definition the replay uses (tracetriage.analyzers.model.span)."""
    return span_of_events(trace.get("traceEvents", []))


def profile_window(wl: FixWorkload, out_path: Path) -> float:
    """One warm-up cycle, then one profiled window exported to out_path (gzipped). Returns its span in µs."""
    from tracetriage.capture.harness import experimental_config

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if wl.gpu else [])
    raw = out_path.with_suffix("")  # .json
    with profile(activities=acts, record_shapes=True, schedule=schedule(wait=0, warmup=1, active=1),
                 experimental_config=experimental_config() if wl.gpu else None,
                 on_trace_ready=lambda p: p.export_chrome_trace(str(raw))) as prof:
        for i in range(2):
            with named_range(WINDOW):
                wl.window()
            if i == 0:
                wl.before_window()  # still in the warm-up cycle, so not recorded
            prof.step()
    data = raw.read_bytes()
    raw.unlink()
    out_path.write_bytes(gzip.compress(data, compresslevel=6))
    return span_us(json.loads(data))


def wall_ms(wl: FixWorkload) -> float:
    """The same window unprofiled, host clock after a sync: what the fix buys without the profiler."""
    wl.before_window()
    wl.sync()
    t0 = time.perf_counter()
    wl.window()
    return (time.perf_counter() - t0) * 1e3


def _summary(xs: list[float]) -> dict:
    s = sorted(xs)
    return {"runs": s, "median": statistics.median(s), "min": s[0], "max": s[-1]}


def ratio_spread(after: list[float], before: list[float]) -> dict:
    """after/before over every pairing of runs: its median and its p10..p90 and min..max."""
    r = sorted(a / b for a in after for b in before)
    q = np.quantile(r, [0.1, 0.9])
    return {"median": statistics.median(after) / statistics.median(before), "p10": float(q[0]), "p90": float(q[1]),
            "min": r[0], "max": r[-1]}


def measure(wls: dict[str, FixWorkload], out: Path, kind: str, *, reps: int) -> tuple[dict, dict]:
    """Set up and warm every variant, then `reps` profiled and unprofiled windows each, interleaved; keeps each
    variant's median-span trace as out/KIND--VARIANT.json.gz. Returns (spans µs, walls ms), lists per variant."""
    for wl in wls.values():
        wl.setup()
        for _ in range(2):
            wl.before_window()
            wl.window()
    spans: dict[str, list[float]] = {v: [] for v in wls}
    walls: dict[str, list[float]] = {v: [] for v in wls}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(reps):
            for v, wl in wls.items():
                spans[v].append(profile_window(wl, Path(tmp) / f"{v}-{r}.json.gz"))
                walls[v].append(wall_ms(wl))
        for v in wls:  # keep the run whose span is the median one
            med = sorted(range(reps), key=lambda i: spans[v][i])[reps // 2]
            shutil.copy(Path(tmp) / f"{v}-{med}.json.gz", out / f"{kind}--{v}.json.gz")
    return spans, walls


def scenario_result(cls: type[FixWorkload], iters: int, spans: dict, walls: dict) -> dict:
    """measured.json's entry for one scenario from every variant's spans and walls."""
    return {
        "about": cls.about,
        "iters": iters,
        "span_us": {v: _summary(s) for v, s in spans.items()},
        "wall_ms": {v: _summary(s) for v, s in walls.items()},
        "ratio": {v: ratio_spread(spans[v], spans[BEFORE]) for v in cls.levers},
        "wall_ratio": {v: ratio_spread(walls[v], walls[BEFORE]) for v in cls.levers},
        # wall_ratio was this plain median before it carried its spread (files from then have only a number)
        "wall_ratio_median": {v: statistics.median(walls[v]) / statistics.median(walls[BEFORE]) for v in cls.levers},
    }


def capture_scenario(kind: str, out: Path, *, device: str, reps: int,
                     scenarios: dict[str, type[FixWorkload]] = SCENARIOS) -> dict:
    """Every variant of one scenario, `reps` profiled windows each, interleaved."""
    cls = scenarios[kind]
    wls = {v: cls(device=device, fix=v) for v in [BEFORE, *cls.levers]}
    spans, walls = measure(wls, out, kind, reps=reps)
    return scenario_result(cls, wls[BEFORE].iters, spans, walls)


def main(argv=None, scenarios: dict[str, type[FixWorkload]] = SCENARIOS) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", nargs="*", choices=sorted(scenarios))
    ap.add_argument("--merge", action="store_true", help="add to the measured.json already in --out")
    ap.add_argument("--levers", action="store_true", help="print each lever's fix as the workloads make it, and exit")
    args = ap.parse_args(argv)
    if args.levers:
        print("\n".join(f"{name:14s} {spec.fix}" for name, spec in LEVERS.items()))
        return 0
    if args.out is None:
        ap.error("--out DIR is required")
    args.out.mkdir(parents=True, exist_ok=True)
    from tracetriage.capture.harness import device_info, versions

    if _gpu(args.device):  # clocks up and cuBLAS loaded before the first scenario
        a = torch.randn(8192, 8192, device=args.device, dtype=torch.bfloat16)
        for _ in range(200):
            a @ a
        torch.cuda.synchronize()
        del a
    result = {"device": device_info(args.device), "versions": versions(), "reps": args.reps, "scenarios": {},
              "errors": {}}
    if args.merge and (args.out / "measured.json").exists():
        old = json.loads((args.out / "measured.json").read_text())
        result["scenarios"], result["errors"] = old.get("scenarios", {}), old.get("errors", {})
    for kind in args.only or scenarios:
        t0 = time.perf_counter()
        try:
            result["scenarios"][kind] = res = capture_scenario(kind, args.out, device=args.device, reps=args.reps,
                                                               scenarios=scenarios)
            ratios = ", ".join(f"{v} {r['median']:.2f} [{r['p10']:.2f}-{r['p90']:.2f}]"
                               for v, r in res["ratio"].items())
            print(f"[ok {time.perf_counter() - t0:5.1f}s] {kind}: before {res['span_us']['before']['median']:.0f} µs; "
                  f"{ratios}", flush=True)
        except Exception as e:  # one failing scenario must not cost the others
            import traceback

            result["errors"][kind] = f"{type(e).__name__}: {e}"
            print(f"[FAIL] {kind}: {e}\n{traceback.format_exc()}", flush=True)
        finally:
            if _gpu(args.device):
                torch.cuda.empty_cache()
        (args.out / "measured.json").write_text(json.dumps(result, indent=1))
    return 0 if not result["errors"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
