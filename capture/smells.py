"""The four timeline smells, two or three differently built variants each, and a
healthy control. Each is built so one idle cause dominates *by construction*; the
manifest records that label, and the analyzers must recover it from the timeline.

Sizes are for an H200 (bf16 4096^3 matmul ~0.2 ms, 64 MB elementwise ~30 µs,
pageable H2D ~10-20 GB/s, pinned ~50 GB/s); each class's cpu_sizes are its sizes on --device cpu.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
import torch.nn as nn

from tracetriage.capture.ranges import named_range
from tracetriage.capture.workload import DTYPES, DType, Workload


def on_gpu(device: str) -> bool:
    return torch.device(device).type == "cuda"


# --- launch overhead: the host issues work slower than the device finishes it -----

@dataclass
class LaunchTinyOps(Workload):
    """200 elementwise ops on a 4 KB tensor: each kernel ~2 µs, each launch ~5-10 µs."""
    kind: ClassVar[str] = "smell_launch_tiny_ops"
    n: int = 1024
    ops_per_step: int = 200

    def setup(self):
        self.x = torch.randn(self.n, device=self.device)

    def step(self):
        with named_range("tiny_ops"):
            x = self.x
            for _ in range(self.ops_per_step // 2):
                x = x * 1.0001   # 4 KB read, 4 KB written: nothing for an H200
                x = x + 0.0001
        return x

    def inputs(self):
        return [self.x]


def narrow_mlp(depth: int, width: int, device: str) -> nn.Module:
    """Linear+LayerNorm+GELU x depth at one width, for inference: every kernel tiny at a small batch."""
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.LayerNorm(width), nn.GELU()]
    return nn.Sequential(*layers).to(device).eval()


@dataclass
class LaunchSmallMLP(Workload):
    """A deep narrow MLP at batch 8: Linear+LayerNorm+GELU x 24, each kernel tiny."""
    kind: ClassVar[str] = "smell_launch_small_mlp"
    batch: int = 8
    width: int = 256
    depth: int = 24

    def setup(self):
        self.net = narrow_mlp(self.depth, self.width, self.device)
        self.x = torch.randn(self.batch, self.width, device=self.device)

    @torch.inference_mode()
    def step(self):
        with named_range("mlp_forward"):
            return self.net(self.x)

    def inputs(self):
        return [self.x]


@dataclass
class LaunchPerParamUpdate(Workload):
    """A hand-written SGD-with-momentum loop over 150 small parameters (no foreach)."""
    kind: ClassVar[str] = "smell_launch_per_param"
    n_params: int = 150
    numel: int = 4096

    def setup(self):
        self.weights = [torch.randn(self.numel, device=self.device) for _ in range(self.n_params)]
        self.grads = [torch.randn_like(p) for p in self.weights]
        self.moms = [torch.zeros_like(p) for p in self.weights]

    @torch.no_grad()
    def step(self):
        with named_range("optimizer_step"):
            for p, g, m in zip(self.weights, self.grads, self.moms):
                m.mul_(0.9).add_(g)          # two launches, 16 KB each
                p.add_(m, alpha=-1e-3)       # one more
        return self.weights[0]

    def inputs(self):
        return self.weights[:1]


# --- host work: the host is busy with something that is not issuing GPU work ------

@dataclass
class HostThenGpu(Workload):
    """Shared shape: host_phase() on the CPU, then a GPU phase of a few matmuls.

    No synchronization anywhere: without the host phase the GPU would stay busy.
    """
    cpu_sizes: ClassVar[dict] = {"gpu_dim": 256, "dtype": "float32"}
    gpu_dim: int = 4096
    gpu_matmuls: int = 2          # ~0.2 ms each on an H200 in bf16
    dtype: DType = "bfloat16"

    def setup(self):
        d, dt = self.gpu_dim, DTYPES[self.dtype]
        self.a = torch.randn(d, d, device=self.device, dtype=dt)
        self.b = torch.randn(d, d, device=self.device, dtype=dt)
        self.setup_host()

    def setup_host(self):
        pass

    def host_phase(self):
        raise NotImplementedError

    def step(self):
        with named_range("host_phase"):
            self.host_phase()
        with named_range("gpu_phase"):
            y = self.a
            for _ in range(self.gpu_matmuls):
                y = y @ self.b
        return y

    def inputs(self):
        return [self.a, self.b]


@dataclass
class HostNumpy(HostThenGpu):
    """numpy preprocessing on the critical path: sort + cumulative stats of 100k floats."""
    kind: ClassVar[str] = "smell_host_numpy"
    host_elems: int = 100_000

    def setup_host(self):
        self.rng = np.random.default_rng(0)

    def host_phase(self):
        v = self.rng.standard_normal(self.host_elems)
        v.sort()
        self.stat = float(np.cumsum(v)[-1] + np.percentile(v, 99))


@dataclass
class HostPython(HostThenGpu):
    """Pure-Python work (a toy tokenizer over strings): untraced by the profiler."""
    kind: ClassVar[str] = "smell_host_python"
    words: int = 20_000

    def setup_host(self):
        self.text = " ".join(f"w{i % 997}" for i in range(self.words))

    def host_phase(self):
        vocab: dict[str, int] = {}
        for w in self.text.split():
            vocab[w] = vocab.get(w, 0) + 1
        self.n_tokens = sum(len(w) for w in sorted(vocab, key=vocab.get))


@dataclass
class HostCpuTensorOps(HostThenGpu):
    """Data loading in the main process: CPU-tensor augmentation of a 3x512x512 image batch.

    The profiler records these as aten ops on the CPU that launch no GPU work.
    """
    kind: ClassVar[str] = "smell_host_cpu_ops"
    images: int = 4

    def setup_host(self):
        self.batch = torch.rand(self.images, 3, 512, 512)  # CPU, 25 MB

    def host_phase(self):
        x = torch.flip(self.batch, dims=[3])
        x = (x - x.mean(dim=(2, 3), keepdim=True)) / (x.std(dim=(2, 3), keepdim=True) + 1e-6)
        x = torch.nn.functional.avg_pool2d(x, 2)
        self.prepared = x.clamp_(-3, 3)


@dataclass
class HostSleep(HostThenGpu):
    """Waiting on I/O (a blocking read, a remote call): simulated with time.sleep."""
    kind: ClassVar[str] = "smell_host_sleep"
    sleep_ms: float = 2.0

    def host_phase(self):
        time.sleep(self.sleep_ms / 1e3)


# --- synchronization: the host waits for the device to drain, every step ----------
# Each iteration queues ~0.5 ms of big matmuls, which the host issues in ~0.1 ms and
# would run ahead of; the sync throws that lead away, so the device idles from the
# drain until the host has issued the next work. (With tiny kernels the host would be
# slower than the device anyway and the trace would be launch-bound, not sync-bound.)

@dataclass
class GpuThenSync(Workload):
    cpu_sizes: ClassVar[dict] = {"dim": 128, "dtype": "float32"}
    dim: int = 4096
    matmuls: int = 3              # bf16 4096^3: ~0.18 ms each on an H200
    inner_steps: int = 8          # syncs per profiled step
    dtype: DType = "bfloat16"

    def setup(self):
        d, dt = self.dim, DTYPES[self.dtype]
        self.a = torch.randn(d, d, device=self.device, dtype=dt) / d ** 0.5
        self.b = torch.randn(d, d, device=self.device, dtype=dt) / d ** 0.5

    range_name: ClassVar[str] = "iteration"

    def work(self):
        y = self.a
        for _ in range(self.matmuls):
            y = y @ self.b            # 4096x4096x4096 bf16: 137 GFLOP, 96 MB
        return y

    def after(self, y) -> bool:
        """The sync under study, once per iteration; True stops the loop early."""
        raise NotImplementedError

    def step(self):
        y = None
        for _ in range(self.inner_steps):
            with named_range(self.range_name):
                y = self.work()
                if self.after(y):
                    break
        return y

    def inputs(self):
        return [self.a, self.b]


@dataclass
class SyncItem(GpuThenSync):
    """A training-style loop that reads the loss with .item() to decide early stopping."""
    kind: ClassVar[str] = "smell_sync_item"

    def after(self, y) -> bool:
        return y.sum().item() > 1e30   # device->host copy + stream sync, every iteration


@dataclass
class SyncExplicit(GpuThenSync):
    """Per-op timing with host clocks: torch.cuda.synchronize() after every matmul."""
    kind: ClassVar[str] = "smell_sync_explicit"

    def step(self):
        y = self.a
        self.times = []
        for _ in range(self.inner_steps * self.matmuls):
            with named_range("timed_op"):
                t0 = time.perf_counter()
                y = y @ self.b
                if on_gpu(self.device):
                    torch.cuda.synchronize()  # the device drains here, every op
                self.times.append(time.perf_counter() - t0)
        return y


@dataclass
class SyncNonzero(GpuThenSync):
    """Data-dependent shapes: boolean-mask indexing (nonzero) syncs to learn the size."""
    kind: ClassVar[str] = "smell_sync_nonzero"
    range_name: ClassVar[str] = "select_rows"

    def after(self, y) -> bool:
        row_max = y.amax(dim=1)
        kept = row_max[row_max > 0]       # nonzero: device->host size, then the host waits
        self.kept_rows = kept.numel()     # known on the host now, no further sync
        return False


@dataclass
class SyncLight(GpuThenSync):
    """.item() after ~0.1 ms of small kernels, which the host issues about as fast as the device
    runs them: sync drains and launch gaps cost about the same. A mixed case, not a clean smell."""
    kind: ClassVar[str] = "control_sync_light"
    dim: int = 2048
    matmuls: int = 4

    def work(self):
        y = self.a
        for _ in range(self.matmuls):
            y = torch.tanh(y @ self.b)
        return y

    def after(self, y) -> bool:
        return y.float().pow(2).mean().item() > 1e9


# --- data transfer: compute idles while bytes cross PCIe ---------------------------

@dataclass
class _TransferBase(Workload):
    cpu_sizes: ClassVar[dict] = {"mbytes": 4, "compute_dim": 128}
    mbytes: int = 128                 # moved per step
    compute_dim: int = 2048           # a short compute phase on the moved batch

    def elems(self) -> int:
        return self.mbytes * (1 << 20) // 4    # float32

    def compute(self, x):
        d = self.compute_dim
        w = x[: d * d].view(d, d)
        return (w @ w).sum()


@dataclass
class TransferPageableH2D(_TransferBase):
    """Each step moves a fresh 128 MB batch from pageable host memory, blocking."""
    kind: ClassVar[str] = "smell_transfer_pageable_h2d"

    def setup(self):
        self.host = torch.randn(self.elems())           # pageable

    def step(self):
        with named_range("load_batch"):
            x = self.host.to(self.device)                # staging copy + DMA + stream sync
        with named_range("compute"):
            return self.compute(x)


@dataclass
class TransferD2H(_TransferBase):
    """Each step computes, then copies a 128 MB result back to pageable host memory."""
    kind: ClassVar[str] = "smell_transfer_d2h"

    def setup(self):
        self.x = torch.randn(self.elems(), device=self.device)

    def step(self):
        with named_range("compute"):
            y = self.x * 2.0 + 1.0
            s = self.compute(y)
        with named_range("offload"):
            self.out = y.cpu()                           # D2H into pageable memory: blocks
        return s


@dataclass
class TransferPinnedSerial(_TransferBase):
    """Pinned + non_blocking, but on the compute stream: copies serialize with compute."""
    kind: ClassVar[str] = "smell_transfer_pinned_serial"
    batches: int = 4

    def setup(self):
        pin = on_gpu(self.device)
        self.host = [torch.randn(self.elems()).pin_memory() if pin else torch.randn(self.elems())
                     for _ in range(self.batches)]

    def step(self):
        s = None
        for h in self.host:
            with named_range("batch"):
                x = h.to(self.device, non_blocking=True)  # async, but the same stream: compute waits
                s = self.compute(x)
        return s


# --- healthy control: copies overlap compute on a side stream -----------------------

@dataclass
class HealthyOverlap(Workload):
    """Prefetch batch i+1 on a copy stream (pinned, non_blocking) while batch i computes."""
    kind: ClassVar[str] = "healthy_overlap"
    cpu_sizes: ClassVar[dict] = {"mbytes": 2, "dim": 128, "dtype": "float32"}
    mbytes: int = 32
    dim: int = 4096
    matmuls: int = 6                  # bf16 4096^3 ~0.2 ms each: >1 ms of compute per batch
    batches: int = 4
    dtype: DType = "bfloat16"

    def setup(self):
        gpu = on_gpu(self.device)     # (pinned memory and a copy stream need a GPU)
        dt = DTYPES[self.dtype]
        elems = self.mbytes * (1 << 20) // dt.itemsize
        self.host = [torch.randn(elems, dtype=dt).pin_memory() if gpu else torch.randn(elems, dtype=dt)
                     for _ in range(self.batches)]
        d = self.dim
        self.w = torch.randn(d, d, device=self.device, dtype=dt) / d ** 0.5
        self.copy_stream = torch.cuda.Stream() if gpu else None

    def _load(self, h):
        if self.copy_stream is None:
            return h.to(self.device), None
        with torch.cuda.stream(self.copy_stream):
            x = h.to(self.device, non_blocking=True)
            ev = torch.cuda.Event()
            ev.record(self.copy_stream)
        return x, ev

    def step(self):
        d = self.w.shape[0]
        nxt = self._load(self.host[0])
        y = None
        for i in range(self.batches):
            x, ready = nxt
            if i + 1 < self.batches:
                nxt = self._load(self.host[i + 1])         # overlaps the compute below
            with named_range("compute"):
                if ready is not None:
                    torch.cuda.current_stream().wait_event(ready)
                    x.record_stream(torch.cuda.current_stream())
                y = x[: d * d].view(d, d)
                for _ in range(self.matmuls):
                    y = torch.tanh(y @ self.w)
        return y

    def inputs(self):
        return [self.w]
