"""A first call that loads its library's code objects (MIOpen's solvers on ROCm: hipModuleLoadData between stretches of
its untraced find) holds the device idle in one-time set-up, not launch overhead: Frameworks101's cold
ConvolutionBackward0 (three loads of 0.8-2.7 ms in an 11.6 ms gap) read "launch overhead 32%", charged to the op
before it (MseLossBackward0). A module load is set-up whatever its length. Hand-built trace."""
from __future__ import annotations

from kineto_factory import call, document, gpu, op, write
from tracetriage.analyzers.analyses import idle
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.verdicts import Cause

US = 1_000


def _cold_conv_backward(tmp_path):
    """Ten fills (their launch calls 30 µs, as the HIP runtime's first calls are), then aten::convolution_backward:
    hipMalloc, three hipModuleLoadData (0.8, 2.6, 1.0 ms) each after untraced host time (2.0, 3.5, 1.3 ms), then
    three kernels launched by hipExtModuleLaunchKernel."""
    ev, k, t = [], 1, 0
    for _ in range(10):
        ev += [op("aten::fill_", t, t + 34 * US, ext=k), call("hipLaunchKernel", t + 2 * US, t + 32 * US, k, k),
               gpu("void vectorized_elementwise_kernel<4, FillFunctor<float>>()", t + 33 * US, t + 36 * US, k)]
        t, k = t + 40 * US, k + 1
    s = t + 20 * US
    ev += [op("aten::convolution_backward", s, s + 12_000 * US, ext=k), call("hipMalloc", s + 10 * US, s + 80 * US)]
    at = s + 100 * US
    for quiet, load_us in ((2_000, 800), (3_500, 2_600), (1_300, 1_000)):
        at += quiet * US
        ev.append(call("hipModuleLoadData", at, at + load_us * US))
        at += load_us * US
    for name in ("SubTensorOpWithScalar1d", "batched_transpose_16x32_dword", "igemm_wrw_gtcx3_nhwc_fp32"):
        at += 20 * US
        ev += [call("hipExtModuleLaunchKernel", at, at + 8 * US, k, k), gpu(name, at + 12 * US, at + 16 * US, k)]
        k += 1
    return load(write(tmp_path / "cold_conv.json.gz", document(ev)))


def test_the_gap_of_a_first_call_loading_its_modules_is_no_launch_overhead(tmp_path):
    dev = idle.analyze(_cold_conv_backward(tmp_path))[0]
    # before: 11.7 ms launch overhead (the loads counted as issuing, the untraced find between them dispatch)
    assert dev.by_cause_ns[Cause.LAUNCH_OVERHEAD] < 1_000 * US     # the fills' own 37 µs gaps
    assert dev.by_cause_ns[Cause.HOST_WORK] > 10_000 * US
