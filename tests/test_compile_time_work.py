"""GPU work launched while torch.compile compiles (Inductor benchmarking a padded matmul, lifting constants) is the
compiler's, not the program's: CS521-mp2's cold compiled convolution (an A10G) read "device time goes to aten::copy_
59% (48 calls)", the compile's copies ranked over the model's own kernels. And a user's range named like Inductor's
('inductor_conv', around the compile and the first run) is no compiling: it held the compiled code's run too.
Hand-built trace."""
from __future__ import annotations

from kineto_factory import annotation, call, document, gpu, op, write
from tracetriage.analyzers.analyses.first_calls import compiling_windows
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.triage.report import analyze_trace

US = 1_000


def _compiled_first_call(tmp_path):
    """A user range 'inductor_conv' around: Dynamo's compile (dynamo_timed) launching 10 copies of 30 µs, then the
    compiled region's run launching a GEMM of 20 µs and an add of 5 µs."""
    ev = [annotation("inductor_conv", 0, 20_000 * US),
          annotation("_compile.compile_inner (dynamo_timed)", 10 * US, 15_000 * US)]
    for i in range(10):
        s = 100 * US + i * 1_000 * US
        ev += [op("aten::copy_", s, s + 50 * US, ext=i + 1),
               call("cudaMemcpyAsync", s + 5 * US, s + 40 * US, i + 1, i + 1),
               gpu("Memcpy DtoD (Device -> Device)", s + 10 * US, s + 40 * US, i + 1, cat="gpu_memcpy")]
    ev += [op("Torch-Compiled Region: 0/0", 16_000 * US, 19_000 * US),
           op("aten::mm", 16_100 * US, 16_200 * US, ext=50),
           call("cudaLaunchKernel", 16_110 * US, 16_150 * US, 50, 50),
           gpu("ampere_sgemm_128x32_tn", 16_200 * US, 16_220 * US, 50),
           op("aten::add", 16_300 * US, 16_400 * US, ext=51),
           call("cudaLaunchKernel", 16_310 * US, 16_350 * US, 51, 51),
           gpu("void at::native::elementwise_kernel<128, 2>(int)", 16_400 * US, 16_405 * US, 51)]
    return write(tmp_path / "compiled.json.gz", document(ev))


def test_the_compiles_own_gpu_work_is_not_a_hotspot_of_the_program(tmp_path):
    a = analyze_trace(load(_compiled_first_call(tmp_path)))
    assert [h.name for h in a.hotspots] == ["aten::mm", "aten::add"]


def test_a_users_range_around_the_compiled_run_is_no_compiling(tmp_path):
    t = load(_compiled_first_call(tmp_path))
    cs, ce = compiling_windows(t)
    assert [(int(s - t.ev.start.min()), int(e - t.ev.start.min())) for s, e in zip(cs, ce)] == [(10 * US, 15_000 * US)]
