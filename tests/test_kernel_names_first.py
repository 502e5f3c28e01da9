"""The regime's readings of kernel names (fp32 math on CUDA cores, the uncosted GEMMs' precision) ask the kernels'
distinct names first, and code each kernel row by its name only where some name answers: most traces run no fp32
CUDA-core GEMM, and the report judges several regimes (the span's, each range's, each inference phase's). The
answers are the ones the per-row codes gave."""
from __future__ import annotations

import numpy as np
import pytest

from kineto_factory import call, document, gpu, op, write
from tracetriage.analyzers.analyses import roofline
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.trace import KERNEL

US = 1_000


def _kernels(tmp_path, names):
    ev = []
    for i, name in enumerate(names):
        t = i * 100 * US
        ev += [op("aten::mm", t, t + 20 * US), call("cudaLaunchKernel", t + 5 * US, t + 10 * US, i + 1),
               gpu(name, t + 12 * US, t + 60 * US + i * US, i + 1)]
    trace = load(write(tmp_path / "k.json.gz", document(ev)))
    rows = np.flatnonzero(trace.ev.cat == KERNEL)
    return trace, rows, (trace.ev.end[rows] - trace.ev.start[rows]).astype(np.float64)


def _no_row_codes(*_):
    raise AssertionError("coded every kernel row by its name")


def test_no_name_that_answers_codes_no_kernel_row(tmp_path, monkeypatch):
    trace, rows, dur = _kernels(tmp_path, ["vectorized_elementwise_kernel", "reduce_kernel"] * 3)
    monkeypatch.setattr(roofline, "name_codes", _no_row_codes)
    assert roofline._fp32_cuda_core_math(trace, rows, dur) == (0.0, ())
    assert roofline._uncosted_matrix_precision(trace, rows, dur, np.zeros(len(rows))) == {}


def test_names_that_answer_are_still_read(tmp_path):
    names = ["volta_sgemm_128x64_nn", "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn", "reduce_kernel"]
    trace, rows, dur = _kernels(tmp_path, names * 2)
    us, longest = roofline._fp32_cuda_core_math(trace, rows, dur)
    assert us == pytest.approx((48 + 51) * 1e3 / 1e3) and longest == ("volta_sgemm_128x64_nn",)
    assert roofline._uncosted_matrix_precision(trace, rows, dur, np.zeros(len(rows))) == pytest.approx(
        {"fp32": 99.0, "bf16": 101.0})
