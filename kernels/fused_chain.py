"""Fused elementwise chain: y = sigmoid(x * scale + shift) * x.

The course's first fusion example. Eager torch runs the chain as four kernels,
each reading and writing HBM; the fused Triton kernel reads x once and writes y
once. The chain is memory-bound, so the speedup is roughly the ratio of bytes
moved: 9 element-passes / 2 element-passes = 4.5x at large n.

Read top to bottom: eager version, bytes ledger, kernel, wrapper, reference,
benchmark. Run `python -m tracetriage.kernels.fused_chain` on a CUDA machine for the table.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

BLOCK = 1024  # elements per program; grid = cdiv(n, BLOCK)

# Element-passes over HBM per output element (one pass = n elements read or written).
EAGER_PASSES = 9  # t1: 1r+1w, t2: 1r+1w, t3: 1r+1w, y: 2r+1w  -> 2+2+2+3
FUSED_PASSES = 2  # read x once, write y once


def chain_eager(x: torch.Tensor, scale: float = 1.5, shift: float = 0.5) -> torch.Tensor:
    """The chain as four separate torch ops: four kernels on a GPU."""
    t1 = x * scale  # reads n (x), writes n (t1)          -> 2 passes
    t2 = t1 + shift  # reads n (t1), writes n (t2)        -> 2 passes
    t3 = torch.sigmoid(t2)  # reads n (t2), writes n (t3) -> 2 passes
    y = t3 * x  # reads 2n (t3, x), writes n (y)          -> 3 passes; total 9
    return y


def bytes_moved(n: int, dtype: torch.dtype, fused: bool) -> int:
    """HBM bytes the chain moves for n elements of dtype (ideal, no cache reuse)."""
    element_size = torch.empty((), dtype=dtype).element_size()
    passes = FUSED_PASSES if fused else EAGER_PASSES
    return passes * n * element_size


@triton.jit
def _fused_chain_kernel(x_ptr, y_ptr, n, scale, shift, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)  # [BLOCK] element indices of this program
    mask = offsets < n  # the last program may run past n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)  # read x: 1 pass
    z = x * scale + shift
    y = tl.sigmoid(z) * x  # all in fp32 registers, no HBM traffic
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)  # write y: 1 pass


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def check_input(x: torch.Tensor, name: str) -> None:
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} expects a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise ValueError(f"{name} expects a floating-point tensor, got dtype {x.dtype}")
    if not x.is_contiguous():
        raise ValueError(
            f"{name} expects a contiguous tensor (got strides {tuple(x.stride())} "
            f"for shape {tuple(x.shape)}); call .contiguous() first"
        )
    if not x.is_cuda and not _interpreting():
        raise ValueError(
            f"{name} expects a CUDA tensor, got one on {x.device}; "
            "set TRITON_INTERPRET=1 before importing triton to run on the CPU"
        )


def check_out(x: torch.Tensor, out: torch.Tensor, name: str) -> None:
    if out.shape != x.shape or out.dtype != x.dtype or out.device != x.device:
        raise ValueError(
            f"{name}: out must match x (shape {tuple(x.shape)}, {x.dtype}, {x.device}); "
            f"got shape {tuple(out.shape)}, {out.dtype}, {out.device}"
        )
    if not out.is_contiguous():
        raise ValueError(f"{name}: out must be contiguous")


def fused_chain(
    x: torch.Tensor,
    scale: float = 1.5,
    shift: float = 0.5,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """sigmoid(x * scale + shift) * x in one kernel; any shape, contiguous, float."""
    check_input(x, "fused_chain")
    if out is None:
        out = torch.empty_like(x)
    else:
        check_out(x, out, "fused_chain")
    n = x.numel()
    if n == 0:
        return out
    grid = (triton.cdiv(n, BLOCK),)
    _fused_chain_kernel[grid](x.view(-1), out.view(-1), n, float(scale), float(shift), BLOCK=BLOCK)
    return out


def chain_reference(x: torch.Tensor, scale: float = 1.5, shift: float = 0.5) -> torch.Tensor:
    """The chain in float64, for accuracy checks."""
    x64 = x.to(torch.float64)
    return torch.sigmoid(x64 * scale + shift) * x64


DEFAULT_SIZES = [2**k for k in range(12, 29)]  # 4 Ki .. 256 Mi elements (1 GiB fp32)


def benchmark(sizes: list[int] | None = None, dtype: torch.dtype = torch.float32) -> list[dict]:
    """Time eager vs fused (median, triton.testing.do_bench); print a GB/s table."""
    if not torch.cuda.is_available():
        raise RuntimeError("benchmark needs a CUDA device (torch.cuda.is_available() is False)")
    sizes = DEFAULT_SIZES if sizes is None else sizes
    rows = []
    print(f"{'n':>11} {'eager us':>10} {'fused us':>10} {'speedup':>8} {'eager GB/s':>11} {'fused GB/s':>11}")
    for n in sizes:
        x = torch.randn(n, device="cuda", dtype=dtype)
        y = torch.empty_like(x)
        ref = chain_reference(x)
        err = ((fused_chain(x, out=y).double() - ref).norm() / ref.norm()).item()
        assert err < 1e-2, f"fused_chain disagrees with the float64 reference at n={n}: rel err {err:.2e}"
        del ref
        eager_ms = triton.testing.do_bench(lambda: chain_eager(x), return_mode="median")
        fused_ms = triton.testing.do_bench(lambda: fused_chain(x, out=y), return_mode="median")
        eager_gbs = bytes_moved(n, dtype, fused=False) / (eager_ms * 1e-3) / 1e9
        fused_gbs = bytes_moved(n, dtype, fused=True) / (fused_ms * 1e-3) / 1e9
        row = dict(
            n=n,
            eager_us=eager_ms * 1e3,
            fused_us=fused_ms * 1e3,
            speedup=eager_ms / fused_ms,
            eager_gbs=eager_gbs,
            fused_gbs=fused_gbs,
        )
        rows.append(row)
        print(
            f"{n:>11} {row['eager_us']:>10.1f} {row['fused_us']:>10.1f} {row['speedup']:>7.2f}x "
            f"{eager_gbs:>11.1f} {fused_gbs:>11.1f}"
        )
        x = y = None   # frees them before the next size (a del would unbind the names the timed lambdas close over)
    return rows


if __name__ == "__main__":
    benchmark()
