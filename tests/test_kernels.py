"""Triton kernels against float64 references; on CPU they run under TRITON_INTERPRET=1."""

import os

import torch

if not torch.cuda.is_available():
    # Must be set before triton is imported (kernels imports it).
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402

from tracetriage.kernels import (  # noqa: E402
    EAGER_PASSES,
    FUSED_PASSES,
    benchmark_chain,
    benchmark_softmax,
    chain_bytes_moved,
    chain_eager,
    chain_reference,
    fused_chain,
    fused_softmax,
    softmax_bytes_moved,
    softmax_reference,
)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

# Relative-norm error bounds against float64; half types are bounded by output rounding.
TOLERANCE = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.5e-2}
DTYPES = [
    torch.float32,
    pytest.param(torch.float16, id="float16"),
    pytest.param(torch.bfloat16, id="bfloat16"),
]
CHAIN_SIZES = [1, 1000, 4097]  # 4097 = 4 full blocks of 1024 + a 1-element tail
SOFTMAX_SHAPES = [(3, 7), (5, 1000), (2, 3, 130)]  # non-power-of-2 rows; a 3-D input


def rel_err(got: torch.Tensor, ref: torch.Tensor) -> float:
    return ((got.double() - ref).norm() / ref.norm()).item()


def random_input(shape, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen, dtype=torch.float32) * 3.0  # spans sigmoid's curve
    return x.to(dtype=dtype, device=DEVICE)


def poisoned_like(x: torch.Tensor) -> torch.Tensor:
    return torch.full_like(x, float("nan"))


def run_or_skip(fn, *args, **kwargs):
    """Half types may be unsupported by some interpreter builds: skip, don't fail."""
    try:
        return fn(*args, **kwargs)
    except (TypeError, NotImplementedError, RuntimeError) as exc:
        if DEVICE == "cpu" and args[0].dtype != torch.float32:
            pytest.skip(f"triton interpreter does not support {args[0].dtype}: {exc}")
        raise


# --- fused chain -------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", CHAIN_SIZES)
def test_fused_chain_matches_reference_on_odd_sizes(n, dtype):
    x = random_input(n, dtype, seed=n)
    out = poisoned_like(x)
    y = run_or_skip(fused_chain, x, scale=1.5, shift=0.5, out=out)
    assert y is out
    assert not torch.isnan(y).any(), "fused_chain left elements of the output unwritten"
    assert y.dtype == dtype
    assert rel_err(y, chain_reference(x, 1.5, shift=0.5)) < TOLERANCE[dtype]


def test_fused_chain_keeps_shape_and_honours_scale_and_shift():
    x = random_input((3, 5, 7), torch.float32, seed=1)
    y = fused_chain(x, scale=-0.25, shift=2.0)
    assert y.shape == x.shape
    assert rel_err(y, chain_reference(x, -0.25, 2.0)) < 1e-5


def test_chain_eager_matches_reference():
    x = random_input(1000, torch.float32, seed=2)
    assert rel_err(chain_eager(x), chain_reference(x)) < 1e-6


def test_fused_chain_on_empty_input_returns_empty():
    x = torch.empty(0, device=DEVICE)
    assert fused_chain(x).shape == (0,)


def test_eager_chain_moves_four_and_a_half_times_the_fused_bytes():
    assert (EAGER_PASSES, FUSED_PASSES) == (9, 2)
    n = 2**20
    assert chain_bytes_moved(n, torch.float32, fused=True) == 2 * 4 * n
    assert chain_bytes_moved(n, torch.float32, fused=False) == 9 * 4 * n
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        eager = chain_bytes_moved(n, dtype, fused=False)
        fused = chain_bytes_moved(n, dtype, fused=True)
        assert eager / fused == 4.5


def test_fused_chain_rejects_integer_input_with_a_clear_message():
    with pytest.raises(ValueError, match="fused_chain expects a floating-point tensor, got dtype torch.int32"):
        fused_chain(torch.arange(10, dtype=torch.int32, device=DEVICE))


def test_fused_chain_rejects_non_contiguous_input_and_says_how_to_fix_it():
    x = random_input((8, 8), torch.float32, seed=3).t()
    with pytest.raises(ValueError, match=r"contiguous.*call \.contiguous\(\) first"):
        fused_chain(x)


def test_fused_chain_rejects_mismatched_out():
    x = random_input(16, torch.float32, seed=4)
    with pytest.raises(ValueError, match="out must match x"):
        fused_chain(x, out=torch.empty(16, dtype=torch.float16, device=DEVICE))


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU tensors are only rejected without the interpreter")
def test_fused_chain_on_cpu_without_interpreter_asks_for_cuda(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="expects a CUDA tensor.*TRITON_INTERPRET=1"):
        fused_chain(torch.ones(4))


# --- fused softmax -----------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SOFTMAX_SHAPES, ids=str)
def test_fused_softmax_matches_reference_on_ragged_rows(shape, dtype):
    x = random_input(shape, dtype, seed=sum(shape))
    out = poisoned_like(x)
    y = run_or_skip(fused_softmax, x, out=out)
    assert y is out
    assert not torch.isnan(y).any(), "fused_softmax left elements of the output unwritten"
    assert y.shape == x.shape and y.dtype == dtype
    assert rel_err(y, softmax_reference(x)) < TOLERANCE[dtype]


def test_fused_softmax_survives_large_logits():
    # Without the max-subtract exp(1000) overflows to inf and the row becomes nan.
    x = random_input((4, 33), torch.float32, seed=5) + 1000.0
    y = fused_softmax(x)
    assert torch.isfinite(y).all()
    assert rel_err(y, softmax_reference(x)) < 1e-5


def test_fused_softmax_bytes_are_one_read_and_one_write():
    x = torch.empty((4096, 256), dtype=torch.float16)
    assert softmax_bytes_moved(x) == 2 * 4096 * 256 * 2


def test_fused_softmax_rejects_integer_input_with_a_clear_message():
    with pytest.raises(ValueError, match="fused_softmax expects a floating-point tensor, got dtype torch.int64"):
        fused_softmax(torch.ones((2, 3), dtype=torch.int64, device=DEVICE))


def test_fused_softmax_rejects_non_contiguous_input_and_says_how_to_fix_it():
    x = random_input((6, 9), torch.float32, seed=6)[:, ::2]
    with pytest.raises(ValueError, match=r"contiguous.*call \.contiguous\(\) first"):
        fused_softmax(x)


def test_fused_softmax_rejects_scalar_input():
    with pytest.raises(ValueError, match="at least 1 dim"):
        fused_softmax(torch.tensor(1.0, device=DEVICE))


# --- benchmarks --------------------------------------------------------------


@pytest.mark.skipif(torch.cuda.is_available(), reason="benchmarks run for real on CUDA")
@pytest.mark.parametrize("benchmark", [benchmark_chain, benchmark_softmax], ids=["chain", "softmax"])
def test_benchmark_without_cuda_raises_and_names_cuda(benchmark):
    with pytest.raises(RuntimeError, match="benchmark needs a CUDA device"):
        benchmark()
