"""torch.compile ground truth: recompiles (no_recompiles) and fusion (fuse), with the bytes each variant moves.

Fusion's byte ledger is measured, not assumed: ByteLedger runs the eager function once under a dispatch
mode and adds up each op's tensor inputs (read) and outputs (written), views costing nothing; the fused
ideal reads the function's tensor inputs once and writes its outputs once. Both go into the variant's
record with the element count and dtype.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from tracetriage.analyzers.whatif.levers import CUDA_GRAPHS, FUSE, KERNELS_2X, NO_RECOMPILES
from tracetriage.capture.fixes import BEFORE, GraphedBody
from tracetriage.capture.realworld_common import RealWorkload


class ByteLedger(TorchDispatchMode):
    """Bytes each aten op reads (its tensor inputs) and writes (its outputs); views and aliases move none."""

    def __init__(self):
        super().__init__()
        self.ops: list[tuple[str, int, int]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        returns = func._schema.returns
        if returns and returns[0].alias_info is not None and not returns[0].alias_info.is_write:
            return out                                     # a view: no kernel, no bytes
        ins = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        outs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        self.ops.append((func.overloadpacket.__name__, sum(_nbytes(t) for t in ins), sum(_nbytes(t) for t in outs)))
        return out


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def byte_ledger(fn, *args) -> dict:
    """What eager fn(*args) moves op by op, against one fused kernel that reads its inputs and writes its output."""
    with torch.no_grad(), ByteLedger() as ledger:
        out = fn(*args)
    outs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
    first = next(a for a in args if isinstance(a, torch.Tensor))
    return {
        "elements": first.numel(), "shape": list(first.shape), "dtype": str(first.dtype).removeprefix("torch."),
        "eager_ops": [f"{name} r{r} w{w}" for name, r, w in ledger.ops],
        "eager_kernels": len(ledger.ops),
        "eager_bytes": sum(r + w for _, r, w in ledger.ops),
        "fused_bytes": sum(_nbytes(a) for a in args if isinstance(a, torch.Tensor)) + sum(_nbytes(t) for t in outs),
    }


# --- fusion (fuse, kernels_2x) ----------------------------------------------------------------

def rmsnorm_swiglu(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """[T, 2F] -> [T, F]: RMSNorm over the hidden dim, op by op as Llama writes it, then SwiGLU on its halves.
    Eager: ~10 kernels, the norm in fp32 (a bf16 x of T x 2F is read, widened to 4 bytes and re-read)."""
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    h = xf.type_as(x) * weight
    a, b = h.chunk(2, dim=-1)
    return F.silu(a) * b


def chain6(x: torch.Tensor) -> torch.Tensor:
    """Six elementwise ops; eager reads and writes every element 13 times (y * x reads two), fused twice."""
    y = x * 1.5
    y = y + 0.5
    y = torch.sigmoid(y)
    y = y * x
    y = y - 0.25
    return torch.relu(y)


@dataclass
class _Fusion(RealWorkload):
    """fn eager (before) vs the same fn under torch.compile (fuse), compiled by the harness's warm-up windows."""
    levers: ClassVar[tuple[str, ...]] = (FUSE,)

    def inputs_for(self, gpu: bool) -> tuple:
        raise NotImplementedError

    def setup(self):
        torch.manual_seed(0)
        self.args = self.inputs_for(self.gpu)
        self.record["ledger"] = byte_ledger(self.fn, *self.args)
        if self.fix == CUDA_GRAPHS:      # the eager kernels, captured once and replayed
            self.run_graph = GraphedBody(lambda: self.fn(*self.args), self.gpu)
            self.run = lambda *a: self.run_graph()
        else:
            self.run = torch.compile(self.fn, dynamic=False) if self.fix == FUSE else self.fn

    @torch.no_grad()
    def step(self):
        self.out = self.run(*self.args)
        return self.out


@dataclass
class RMSNormSwiGLU(_Fusion):
    tokens: int = 8192
    hidden: int = 4096
    iters: int = 10
    fn: ClassVar = staticmethod(rmsnorm_swiglu)

    def inputs_for(self, gpu):
        t, h = (self.tokens, self.hidden) if gpu else (min(self.tokens, 64), min(self.hidden, 256))
        dt = torch.bfloat16 if gpu else torch.float32
        return (torch.randn(t, h, device=self.device, dtype=dt), torch.randn(h, device=self.device, dtype=dt))


@dataclass
class RMSNormSwiGLULarge(RMSNormSwiGLU):
    kind: ClassVar[str] = "rmsnorm_swiglu_large"
    about: ClassVar[str] = ("eager RMSNorm+SwiGLU on 8192x4096 bf16 (64 MiB in, 32 MiB out; memory-bound) vs "
                            "torch.compile of it")


@dataclass
class RMSNormSwiGLUMid(RMSNormSwiGLU):
    levers: ClassVar[tuple[str, ...]] = (FUSE, CUDA_GRAPHS)
    kind: ClassVar[str] = "rmsnorm_swiglu_mid"
    about: ClassVar[str] = ("eager RMSNorm+SwiGLU on 2048x4096 bf16 (16 MiB in; each eager kernel ~5-15 µs, about "
                            "its launch) vs torch.compile")
    tokens: int = 2048
    iters: int = 20


@dataclass
class RMSNormSwiGLUSmall(RMSNormSwiGLU):
    levers: ClassVar[tuple[str, ...]] = (FUSE, CUDA_GRAPHS)
    kind: ClassVar[str] = "rmsnorm_swiglu_small"
    about: ClassVar[str] = "eager RMSNorm+SwiGLU on 8x1024 bf16 (16 KiB: launch-bound) vs torch.compile"
    tokens: int = 8
    hidden: int = 1024
    iters: int = 200


@dataclass
class Chain6Large(_Fusion):
    kind: ClassVar[str] = "chain6_large"
    levers: ClassVar[tuple[str, ...]] = (FUSE, KERNELS_2X)
    about: ClassVar[str] = ("six-op elementwise chain over 64M fp32 (256 MiB; eager 13 passes = 3.25 GiB per call) "
                            "vs torch.compile (2 passes); kernels_2x: the eager chain on 32M elements")
    n: int = 1 << 26
    iters: int = 8
    fn: ClassVar = staticmethod(chain6)

    def inputs_for(self, gpu):
        n = self.n if gpu else 1 << 16
        n = n // 2 if self.fix == KERNELS_2X else n   # half the elements: every kernel moves half the bytes
        return (torch.randn(n, device=self.device),)


# --- recompiles (no_recompiles) ----------------------------------------------------------------

class NormMLP(nn.Module):
    """RMSNorm -> SwiGLU MLP with a residual (the MLP half of a Llama layer): one small graph to compile."""

    def __init__(self, dim: int, ffn: int):
        super().__init__()
        self.norm = nn.RMSNorm(dim)
        self.gate_up, self.down = nn.Linear(dim, 2 * ffn, bias=False), nn.Linear(ffn, dim, bias=False)

    def forward(self, x):
        g, u = self.gate_up(self.norm(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(g) * u)


@dataclass
class Recompile(RealWorkload):
    """A compiled RMSNorm + SwiGLU MLP block fed a new sequence length every iteration.

    before: torch.compile(dynamic=False), and dynamo reset before each window (outside the profiler and the
    timer), so each of the window's shapes compiles inside it. no_recompiles: torch.compile(dynamic=True),
    compiled before each window (also outside) on a length the window does not use; the window's shapes
    run that one graph.
    Inductor's on-disk FX graph and Triton caches stay warm after a shape's first compile, so a recompile
    here is dynamo + AOT tracing + a cache hit (about a second), not a cold Inductor build.
    """
    kind: ClassVar[str] = "recompile"
    levers: ClassVar[tuple[str, ...]] = (NO_RECOMPILES,)
    about: ClassVar[str] = ("a torch.compile(dynamic=False) RMSNorm+SwiGLU MLP block (dim 1024, ffn 2816, batch 4, "
                            "bf16) called at 3 new sequence lengths per window, dynamo reset before each; "
                            "no_recompiles: dynamic=True, compiled before the window on another length")
    dim: int = 1024
    ffn: int = 2816
    batch: int = 4
    seq_lens: tuple[int, ...] = (200, 264, 328)
    warm_len: int = 136
    iters: int = 3
    smoke: ClassVar[dict] = {"iters": 1}

    def setup(self):
        self.dtype = torch.bfloat16 if self.gpu else torch.float32
        torch.manual_seed(0)
        self.block = self.build().to(self.device, self.dtype).eval()
        self.inputs = {t: self.input_for(t) for t in (*self.seq_lens, self.warm_len)}
        self.compiled = torch.compile(self.block, dynamic=self.fix == NO_RECOMPILES)
        self.i = 0

    def build(self) -> nn.Module:
        return NormMLP(*((self.dim, self.ffn) if self.gpu else (64, 128)))

    def input_for(self, size: int) -> torch.Tensor:
        """[batch, size, dim]; sequence lengths / 8 on the CPU."""
        dim = self.dim if self.gpu else 64
        return torch.randn(self.batch, size // (1 if self.gpu else 8), dim, device=self.device, dtype=self.dtype)

    def before_window(self):
        # Both variants share the block's code object and with it dynamo's cache: reset, so the before's
        # window meets its shapes unseen and the after's runs only its own dynamic graph, compiled here.
        torch._dynamo.reset()
        if self.fix != BEFORE:
            with torch.no_grad():
                self.compiled(self.inputs[self.warm_len])
            self.sync()

    @torch.no_grad()
    def step(self):
        t = self.seq_lens[self.i % len(self.seq_lens)]
        self.i += 1
        self.out = self.compiled(self.inputs[t])
        return self.out

    def window(self):
        from torch._dynamo.utils import counters

        start = counters["stats"]["unique_graphs"]
        super().window()
        self.note_window(graphs_compiled=counters["stats"]["unique_graphs"] - start)


@dataclass
class RecompileBatch(Recompile):
    """The serving case: a compiled block (dynamic=False) meets a new batch size every call."""
    kind: ClassVar[str] = "recompile_batch"
    about: ClassVar[str] = ("a torch.compile(dynamic=False) RMSNorm+SwiGLU MLP block (dim 2048, ffn 5632, 128 "
                            "tokens, bf16) called at 3 new batch sizes per window (3, 5, 6), dynamo reset before "
                            "each; no_recompiles: dynamic=True, compiled before the window on batch 7")
    dim: int = 2048
    ffn: int = 5632
    tokens: int = 128
    seq_lens: tuple[int, ...] = (3, 5, 6)       # here: the batch sizes
    warm_len: int = 7

    def input_for(self, size: int) -> torch.Tensor:
        dim, tokens = (self.dim, self.tokens) if self.gpu else (64, 16)
        return torch.randn(size, tokens, dim, device=self.device, dtype=self.dtype)


@dataclass
class RecompileGPT2(Recompile):
    """HF transformers: a compiled GPT-2 forward (dynamic=False) fed prompts of new lengths."""
    kind: ClassVar[str] = "recompile_gpt2"
    about: ClassVar[str] = ("HF transformers GPT-2 (2 layers, 512 wide, random weights, bf16, eval) under "
                            "torch.compile(dynamic=False), batch 2 at 2 new prompt lengths per window (96, 160), "
                            "dynamo reset before each; no_recompiles: dynamic=True, compiled before on length 64")
    seq_lens: tuple[int, ...] = (96, 160)
    warm_len: int = 64
    batch: int = 2
    needs: ClassVar[tuple[str, ...]] = ("transformers",)

    def build(self) -> nn.Module:
        import transformers

        layers, embd = (2, 512) if self.gpu else (1, 64)
        cfg = transformers.GPT2Config(n_layer=layers, n_embd=embd, n_head=8, n_positions=256, vocab_size=8192,
                                      bos_token_id=0, eos_token_id=0, use_cache=False)
        return _LogitsOnly(transformers.GPT2LMHeadModel(cfg))

    def input_for(self, size: int) -> torch.Tensor:
        return torch.randint(0, 8192, (self.batch, size // (1 if self.gpu else 8)), device=self.device)


class _LogitsOnly(nn.Module):
    """The HF model's forward returning its logits tensor (the output dataclass is not a tensor to sync on)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids).logits


COMPILE_SCENARIOS = [Recompile, RecompileBatch, RecompileGPT2, RMSNormSwiGLULarge, RMSNormSwiGLUMid, RMSNormSwiGLUSmall,
                     Chain6Large]
