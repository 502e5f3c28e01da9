"""A long templated kernel name in the Time line keeps what the kernel does: PyTorch's TensorIterator kernels share
their first hundred characters (`void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::nat…`),
so a runtime-only capture, where kernels are listed by their own names, read a copy, a multiply and an add alike
(heldout-user18 swin_a4000: 130 `.contiguous()` copies, 14% of GPU time, read as an anonymous elementwise kernel).
The label is the kernel with its functor: 'elementwise_kernel<128, 2> of direct_copy_kernel_cuda (a copy)'."""
import kineto_factory as kf
from kineto_factory import call, document, gpu
from other_peoples_traces import US
from tracetriage.analyzers.model.kernel_label import kernel_label
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file

_IMPL = ("at::native::(anonymous namespace)::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::"
         "operator()() const::{lambda()#8}::operator()() const::{lambda(float)#1}")
COPY = (f"void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<{_IMPL}>(at::TensorIteratorBase&, "
        f"{_IMPL} const&)::{{lambda(int)#1}}>(int, at::native::gpu_kernel_impl<{_IMPL}>(at::TensorIteratorBase&, "
        f"{_IMPL} const&)::{{lambda(int)#1}})")
_MUL = "at::native::BinaryFunctor<float, float, float, at::native::MulFunctor<float> >"
MUL = (f"void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<{_MUL} >(at::TensorIteratorBase&, "
       f"{_MUL} const&)::{{lambda(int)#1}}>(int, at::native::gpu_kernel_impl<{_MUL} >(at::TensorIteratorBase&, "
       f"{_MUL} const&)::{{lambda(int)#1}})")


def _runtime_only_copies(n: int = 40) -> dict:
    """A runtime-only capture (no cpu_op): n launches alternating a copy kernel (30 µs) and an sgemm (20 µs)."""
    ev, t = [], 100 * US
    for i in range(n):
        name, dur = (COPY, 30 * US) if i % 2 == 0 else ("ampere_sgemm_128x64_tn", 20 * US)
        ev += [call("cudaLaunchKernel", t, t + 5 * US, 1000 + i), gpu(name, t + 8 * US, t + 8 * US + dur, 1000 + i)]
        t += dur + 15 * US
    return document(ev)


def test_a_copy_kernel_cut_before_its_functor_is_named_by_its_functor(tmp_path):
    out = serialize.report(analyze_file(kf.write(tmp_path / "t.json", _runtime_only_copies())))
    time = out["lines"][1]
    assert "elementwise_kernel<128, 2> of direct_copy_kernel_cuda (a copy)" in time
    assert "gpu_kernel_impl<at::nat…" not in time
    assert claims.check(out) == []


def test_a_wrapped_functor_is_named_by_what_it_wraps():
    assert kernel_label(MUL) == "elementwise_kernel<128, 2> of MulFunctor<float> (a multiply)"


def test_a_name_that_fits_or_has_no_functor_is_kept_or_cut():
    assert kernel_label("ampere_sgemm_128x64_tn") == "ampere_sgemm_128x64_tn"
    long = "void implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, false, true>(int, int, int)"
    assert kernel_label(long) == long[:79] + "…"
