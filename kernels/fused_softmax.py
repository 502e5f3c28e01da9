"""Fused row-wise softmax over the last dim (the Triton tutorial's kernel).

One program per row; the whole row sits in registers (BLOCK = next power of two
of n_cols), so the kernel reads the input once and writes the output once:
2 * numel * element_size bytes. Eager softmax composed from max/sub/exp/sum/div
would move several times that; torch.softmax is itself a fused kernel, so the
benchmark compares two one-pass kernels and both should approach HBM bandwidth.

Read top to bottom: kernel, wrapper, reference, bytes ledger, benchmark.
Run `python -m tracetriage.kernels.fused_softmax` on a CUDA machine for the table.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from tracetriage.kernels.fused_chain import check_input, check_out

MAX_COLS = 2**16  # whole row in registers: beyond this the kernel spills badly


@triton.jit
def _fused_softmax_kernel(
    out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr
):
    row = tl.program_id(axis=0).to(tl.int64)  # int64: rows * stride may pass 2**31
    cols = tl.arange(0, BLOCK)  # [BLOCK] column indices, BLOCK >= n_cols
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))  # read row: 1 pass
    x = x.to(tl.float32)  # padding lanes are -inf, so they add exp(-inf) = 0 to the sum
    z = x - tl.max(x, axis=0)  # max-subtract: exp never overflows
    num = tl.exp(z)
    den = tl.sum(num, axis=0)
    y = num / den
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)  # write row: 1 pass


def _num_warps(block: int) -> int:
    if block >= 8192:
        return 16
    if block >= 2048:
        return 8
    return 4


def fused_softmax(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """softmax(x, dim=-1) in one kernel; contiguous float tensor with at least 1 dim."""
    check_input(x, "fused_softmax")
    if x.dim() == 0:
        raise ValueError("fused_softmax expects a tensor with at least 1 dim (softmax is over the last dim), "
                         "got a scalar")
    n_cols = x.shape[-1]
    if n_cols > MAX_COLS:
        raise ValueError(
            f"fused_softmax keeps a whole row in registers and supports at most {MAX_COLS} columns, got {n_cols}"
        )
    if out is None:
        out = torch.empty_like(x)
    else:
        check_out(x, out, "fused_softmax")
    if x.numel() == 0:
        return out
    x2 = x.view(-1, n_cols)  # [rows, n_cols]
    out2 = out.view(-1, n_cols)  # [rows, n_cols]
    n_rows = x2.shape[0]
    block = triton.next_power_of_2(n_cols)
    _fused_softmax_kernel[(n_rows,)](
        out2, x2, x2.stride(0), out2.stride(0), n_cols, BLOCK=block, num_warps=_num_warps(block)
    )
    return out


def softmax_reference(x: torch.Tensor) -> torch.Tensor:
    """torch.softmax over the last dim in float64, for accuracy checks."""
    return torch.softmax(x.to(torch.float64), dim=-1)


def bytes_moved(x: torch.Tensor) -> int:
    """HBM bytes of an ideal one-pass softmax: read x once, write the output once."""
    return 2 * x.numel() * x.element_size()


DEFAULT_SHAPES = [(4096, 2**k) for k in range(8, 15)]  # 4096 rows x 256 .. 16384 cols


def benchmark(shapes: list[tuple[int, int]] | None = None, dtype: torch.dtype = torch.float32) -> list[dict]:
    """Time torch.softmax vs fused_softmax (median, do_bench); print a GB/s table."""
    if not torch.cuda.is_available():
        raise RuntimeError("benchmark needs a CUDA device (torch.cuda.is_available() is False)")
    shapes = DEFAULT_SHAPES if shapes is None else shapes
    rows = []
    print(f"{'shape':>14} {'torch us':>10} {'fused us':>10} {'torch GB/s':>11} {'fused GB/s':>11}")
    for shape in shapes:
        x = torch.randn(shape, device="cuda", dtype=dtype)
        ref = softmax_reference(x)
        err = ((fused_softmax(x).double() - ref).norm() / ref.norm()).item()
        assert err < 1e-2, f"fused_softmax disagrees with the float64 reference at {shape}: rel err {err:.2e}"
        del ref
        torch_ms = triton.testing.do_bench(lambda: torch.softmax(x, dim=-1), return_mode="median")
        fused_ms = triton.testing.do_bench(lambda: fused_softmax(x), return_mode="median")
        nbytes = bytes_moved(x)
        row = dict(
            shape=tuple(shape),
            torch_us=torch_ms * 1e3,
            fused_us=fused_ms * 1e3,
            torch_gbs=nbytes / (torch_ms * 1e-3) / 1e9,
            fused_gbs=nbytes / (fused_ms * 1e-3) / 1e9,
        )
        rows.append(row)
        print(
            f"{str(tuple(shape)):>14} {row['torch_us']:>10.1f} {row['fused_us']:>10.1f} "
            f"{row['torch_gbs']:>11.1f} {row['fused_gbs']:>11.1f}"
        )
    return rows


if __name__ == "__main__":
    benchmark()
