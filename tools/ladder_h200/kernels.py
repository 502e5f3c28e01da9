"""Triton kernels whose launch shape is the knob: the occupancy and transpose rungs (M03.01, M03.02).

Each wrapper takes the knobs as arguments (programs, BLOCK, num_warps, tiles) so one kernel gives several
launch shapes, and Kineto records each launch's grid, block, registers per thread, shared memory, blocks per
SM, warps per SM and estimated occupancy beside its time. Runs under TRITON_INTERPRET=1 on a CPU (small sizes).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _stream_scale(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    # grid-stride: `programs` blocks walk the whole array, BLOCK elements per step. Bytes: 2 * n * 4 (fp32 in, out)
    # whatever the launch shape; what changes is how many bytes each SM has in flight (warps x elements per thread).
    pid = tl.program_id(0)
    step = tl.num_programs(0) * BLOCK
    for start in range(pid * BLOCK, n, step):
        offs = start + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m)
        tl.store(y_ptr + offs, x * alpha, mask=m)


def stream_scale(x: torch.Tensor, y: torch.Tensor, *, programs: int, block: int, num_warps: int) -> torch.Tensor:
    """y = 2x over a flat fp32 tensor with `programs` blocks of `num_warps` warps, `block` elements a step."""
    _stream_scale[(programs,)](x, y, x.numel(), 2.0, BLOCK=block, num_warps=num_warps)
    return y


@triton.jit
def _matmul(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    # The Triton tutorial's tiled matmul. A BM x BN tile reads (BM + BN) * K elements for 2 * BM * BN * K FLOPs:
    # smaller tiles mean more blocks per SM (occupancy up) and less reuse per byte fetched (traffic up).
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BM)
    grid_n = tl.cdiv(N, BN)
    width = GROUP_M * grid_n
    group = pid // width
    first_m = group * GROUP_M
    size_m = min(grid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % width) % size_m
    pid_n = (pid % width) // size_m
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a_t = tl.load(a, mask=(rm[:, None] < M) & (rk[None, :] + k < K), other=0.0)
        b_t = tl.load(b, mask=(rk[:, None] + k < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a_t, b_t)
        a += BK * sak
        b += BK * sbk
    c = c_ptr + rm[:, None] * scm + rn[None, :] * scn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, *, bm: int, bn: int, bk: int, num_warps: int,
           num_stages: int) -> torch.Tensor:
    """c = a @ b with BM x BN x BK tiles; num_stages sets the shared memory each block holds."""
    m, k = a.shape
    n = b.shape[1]
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    _matmul[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                  BM=bm, BN=bn, BK=bk, GROUP_M=8, num_warps=num_warps, num_stages=num_stages)
    return c


@triton.jit
def _transpose_rows(x_ptr, y_ptr, R, C, BLOCK: tl.constexpr):
    # y[r, c] = x[c, r], y is R x C and x is C x R. One program writes one row of y (coalesced) and reads one
    # column of x: neighbouring lanes read addresses R * 4 bytes apart, one 32-byte sector each for 4 useful bytes.
    r = tl.program_id(0).to(tl.int64)
    for c0 in range(0, C, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        m = cols < C
        v = tl.load(x_ptr + cols * R + r, mask=m)
        tl.store(y_ptr + r * C + cols, v, mask=m)


def transpose_naive(x: torch.Tensor) -> torch.Tensor:
    """x.t() made contiguous, one output row per program: strided reads, coalesced writes."""
    c, r = x.shape
    y = torch.empty((r, c), device=x.device, dtype=x.dtype)
    _transpose_rows[(r,)](x, y, r, c, BLOCK=1024, num_warps=4)
    return y


@triton.jit
def _transpose_tiles(x_ptr, y_ptr, R, C, T: tl.constexpr):
    # A T x T tile of x read along its rows (coalesced), transposed in registers/shared memory by the compiler's
    # layout change, written along y's rows (coalesced): every sector fetched is used whole.
    pid_r = tl.program_id(0).to(tl.int64)
    pid_c = tl.program_id(1).to(tl.int64)
    xr = pid_c * T + tl.arange(0, T)     # rows of x = columns of y
    xc = pid_r * T + tl.arange(0, T)     # columns of x = rows of y
    m = (xr[:, None] < C) & (xc[None, :] < R)
    tile = tl.load(x_ptr + xr[:, None] * R + xc[None, :], mask=m)
    tl.store(y_ptr + xc[None, :] * C + xr[:, None], tile, mask=m)


def transpose_tiled(x: torch.Tensor, tile: int = 64) -> torch.Tensor:
    """x.t() made contiguous through T x T tiles: coalesced reads and writes."""
    c, r = x.shape
    y = torch.empty((r, c), device=x.device, dtype=x.dtype)
    _transpose_tiles[(triton.cdiv(r, tile), triton.cdiv(c, tile))](x, y, r, c, T=tile, num_warps=4)
    return y
