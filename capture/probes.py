"""More smells, built differently from capture/smells.py, to check that the idle rules
generalise: each is a different code path to the same cause (a Python loop over rows, a
DataLoader, print(), .any(), .tolist(), an event sync, .cpu().numpy()).
"""
from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
import torch.nn as nn

from tracetriage.capture.ranges import named_range
from tracetriage.capture.smells import GpuThenSync, HostThenGpu, on_gpu
from tracetriage.capture.workload import Workload

# --- launch overhead --------------------------------------------------------------------

@dataclass
class LaunchEmbeddingLoop(Workload):
    """Token-by-token embedding lookups and adds in a Python loop (64 tokens, width 512)."""
    kind: ClassVar[str] = "probe_launch_embedding_loop"
    tokens: int = 64

    def setup(self):
        self.emb = nn.Embedding(1000, 512).to(self.device)
        self.ids = torch.randint(0, 1000, (self.tokens,), device=self.device)
        self.pos = torch.randn(self.tokens, 512, device=self.device)

    @torch.no_grad()
    def step(self):
        with named_range("embed_loop"):
            out = []
            for i in range(self.tokens):
                out.append(self.emb(self.ids[i:i + 1]) + self.pos[i])   # slice, gather, add: 3 tiny launches
            return torch.cat(out)

    def inputs(self):
        return [self.ids]


@dataclass
class LaunchRowSoftmax(Workload):
    """Softmax one row at a time in Python over a 128x128 tensor (exp, sum, div per row)."""
    kind: ClassVar[str] = "probe_launch_row_softmax"
    rows: int = 128

    def setup(self):
        self.x = torch.randn(self.rows, 128, device=self.device)

    def step(self):
        with named_range("row_loop"):
            out = torch.empty_like(self.x)
            for i in range(self.rows):
                e = torch.exp(self.x[i] - 1.0)
                out[i] = e / e.sum()
            return out

    def inputs(self):
        return [self.x]


# --- host work --------------------------------------------------------------------------------

class _NumpyImages(torch.utils.data.Dataset):
    """A dataset whose __getitem__ crops and normalises a 3x256x256 image with numpy."""

    def __init__(self, n: int):
        self.rng = np.random.default_rng(0)
        self.base = self.rng.random((3, 256, 256), dtype=np.float32)
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        y, x = self.rng.integers(0, 32, 2)
        crop = self.base[:, y:y + 224, x:x + 224]
        crop = (crop - crop.mean()) / (crop.std() + 1e-6)
        return torch.from_numpy(np.ascontiguousarray(crop[:, :, ::-1]))


@dataclass
class HostDataLoader(HostThenGpu):
    """DataLoader with num_workers=0: each batch of 16 crops is built in the main process."""
    kind: ClassVar[str] = "probe_host_dataloader"
    batch: int = 16

    def setup_host(self):
        self.loader = torch.utils.data.DataLoader(_NumpyImages(10_000), batch_size=self.batch, num_workers=0)
        self.it = iter(self.loader)

    def host_phase(self):
        try:
            self.batch_t = next(self.it)
        except StopIteration:
            self.it = iter(self.loader)
            self.batch_t = next(self.it)


@dataclass
class HostJson(HostThenGpu):
    """Serialising a metrics dict to JSON and back between steps (a logging hook)."""
    kind: ClassVar[str] = "probe_host_json"
    entries: int = 5_000

    def setup_host(self):
        self.metrics = {f"layer{i}.w": [float(i), float(i) / 3, i * 7] for i in range(self.entries)}

    def host_phase(self):
        self.blob = json.loads(json.dumps(self.metrics))


# --- synchronization -------------------------------------------------------------------------

@dataclass
class SyncPrint(GpuThenSync):
    """print() of a tensor statistic every iteration (its repr copies the value to the host)."""
    kind: ClassVar[str] = "probe_sync_print"

    def after(self, y) -> bool:
        with redirect_stdout(io.StringIO()):
            print(y[0, :2])
        return False


@dataclass
class SyncAny(GpuThenSync):
    """Data-dependent control flow: `if (y < -1e6).any():` after each iteration's matmuls."""
    kind: ClassVar[str] = "probe_sync_any"

    def after(self, y) -> bool:
        if (y < -1e6).any():              # bool(tensor): a device->host read
            self.clamped = y.clamp(min=-1e6)
        return False


@dataclass
class SyncEvent(GpuThenSync):
    """A CUDA event recorded and waited on by the host after every iteration."""
    kind: ClassVar[str] = "probe_sync_event"

    def after(self, y) -> bool:
        if on_gpu(self.device):
            ev = torch.cuda.Event()
            ev.record()
            ev.synchronize()              # cudaEventSynchronize
        return False


@dataclass
class SyncTolist(GpuThenSync):
    """Reading a few values with .tolist() for logging after each iteration."""
    kind: ClassVar[str] = "probe_sync_tolist"

    def after(self, y) -> bool:
        self.logged = y[0, :4].tolist()
        return False


# --- data transfer ----------------------------------------------------------------------------

@dataclass
class TransferToNumpy(Workload):
    """Activations pulled back with .cpu().numpy() every step: 4 tensors of 32 MB each."""
    kind: ClassVar[str] = "probe_transfer_to_numpy"
    cpu_sizes: ClassVar[dict] = {"mbytes": 1}
    tensors: int = 4
    mbytes: int = 32

    def setup(self):
        self.xs = [torch.randn(self.mbytes * (1 << 20) // 4, device=self.device) for _ in range(self.tensors)]

    def step(self):
        out = []
        for x in self.xs:
            with named_range("offload"):
                out.append((x * 0.5).cpu().numpy().sum())
        return out

    def inputs(self):
        return self.xs


@dataclass
class TransferUnpinnedLoader(Workload):
    """Big unpinned batches copied to the device each step (DataLoader without pin_memory)."""
    kind: ClassVar[str] = "probe_transfer_unpinned_batches"
    cpu_sizes: ClassVar[dict] = {"mbytes": 1, "compute_dim": 64}
    batches: int = 3
    mbytes: int = 64
    compute_dim: int = 1024

    def setup(self):
        self.host = [torch.randn(self.mbytes * (1 << 20) // 4) for _ in range(self.batches)]
        d = self.compute_dim
        self.w = torch.randn(d, d, device=self.device)

    def step(self):
        s = None
        d = self.w.shape[0]
        for h in self.host:
            with named_range("batch"):
                x = h.to(self.device)                 # pageable: staged through the host
                s = (x[: d * d].view(d, d) @ self.w).sum()
        return s

    def inputs(self):
        return [self.w]


# --- a second batch, captured after the first probes passed ------------------------------------

@dataclass
class LaunchLSTMCell(Workload):
    """An LSTMCell stepped 64 times in Python at batch 4, hidden 256: a handful of tiny kernels a step."""
    kind: ClassVar[str] = "probe_launch_lstm_cell"
    timesteps: int = 64

    def setup(self):
        self.cell = nn.LSTMCell(256, 256).to(self.device)
        self.x = torch.randn(self.timesteps, 4, 256, device=self.device)

    @torch.no_grad()
    def step(self):
        with named_range("lstm_loop"):
            h = c = torch.zeros(4, 256, device=self.device)
            for t in range(self.timesteps):
                h, c = self.cell(self.x[t], (h, c))
            return h

    def inputs(self):
        return [self.x]


@dataclass
class HostRegexTokenize(HostThenGpu):
    """Regex tokenisation of a few thousand sentences before each GPU phase."""
    kind: ClassVar[str] = "probe_host_regex_tokenize"
    sentences: int = 2000

    def setup_host(self):
        import re

        self.pattern = re.compile(r"\w+|[^\w\s]")
        self.text = [f"The {i}th sentence, with punctuation; and words #{i % 97}!" for i in range(self.sentences)]

    def host_phase(self):
        self.tokens = sum(len(self.pattern.findall(t)) for t in self.text)


@dataclass
class SyncStream(GpuThenSync):
    """torch.cuda.current_stream().synchronize() after each iteration (cudaStreamSynchronize)."""
    kind: ClassVar[str] = "probe_sync_stream"

    def after(self, y) -> bool:
        if on_gpu(self.device):
            torch.cuda.current_stream().synchronize()
        return False


@dataclass
class SyncEqual(GpuThenSync):
    """A convergence check with torch.equal (its answer is a bool on the host)."""
    kind: ClassVar[str] = "probe_sync_equal"

    def after(self, y) -> bool:
        return torch.equal(y, self.a)     # never equal here: the loop runs on, syncing each time


@dataclass
class TransferFromNumpy(Workload):
    """A 64 MB numpy batch made on the host each step and moved with torch.from_numpy(x).cuda()."""
    kind: ClassVar[str] = "probe_transfer_from_numpy"
    cpu_sizes: ClassVar[dict] = {"mbytes": 1, "compute_dim": 64}
    mbytes: int = 64
    compute_dim: int = 1024

    def setup(self):
        self.host = np.random.default_rng(0).random(self.mbytes * (1 << 20) // 4, dtype=np.float32)
        d = self.compute_dim
        self.w = torch.randn(d, d, device=self.device)

    def step(self):
        d = self.w.shape[0]
        with named_range("load"):
            x = torch.from_numpy(self.host).to(self.device)       # pageable: staged through the host
        with named_range("compute"):
            return (x[: d * d].view(d, d) @ self.w).sum()

    def inputs(self):
        return [self.w]


@dataclass
class TransferManySmall(Workload):
    """200 small Python lists turned into device tensors each step (torch.tensor(list, device=...))."""
    kind: ClassVar[str] = "probe_transfer_many_small"
    lists: int = 200
    length: int = 256

    def setup(self):
        self.data = [[float(i + j) for j in range(self.length)] for i in range(self.lists)]

    def step(self):
        with named_range("to_device"):
            ts = [torch.tensor(row, device=self.device) for row in self.data]
        with named_range("compute"):
            return torch.stack(ts).sum()
