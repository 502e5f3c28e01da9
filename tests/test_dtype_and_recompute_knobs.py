"""drop_float64, convert_on_gpu and no_checkpointing on small synthetic traces that show each construct, and on the
traces where each must NOT fire (a loss kept in double, a conversion of another tensor, a backward without a
recomputed forward). The real pairs they were written from (fresh6 fno_default_float64, vit_float_on_cpu_copy,
wav2vec2_grad_checkpointing, an H100) are other projects' files and are not committed."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from kineto_factory import call, chain, document, events_for, gpu, op, write
from other_peoples_traces import MS, US, steady, with_device
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import CONVERT_ON_GPU, DROP_FLOAT64, NO_CHECKPOINTING, drop_float64

H100 = "NVIDIA H100 80GB HBM3"
BACKWARD_TID = 9


def _predict(tmp_path: Path, doc: dict, lever: str):
    return whatif.predict(load(write(tmp_path / "t.json.gz", doc)), [lever]).lever(lever)


# --- drop_float64 --------------------------------------------------------------------------------------------------

def _mixed(fp64: int, fp32: int, fp64_kernel: str = "void at::native::elementwise_kernel<CUDAFunctor_add<double>>()",
           fp64_ns: int = 200 * US) -> dict:
    """Kernels queued up front (device-bound): `fp64` of fp64_ns in double, then `fp32` of 200 µs in float."""
    launches = [dataclasses.replace(x, kernel=fp64_kernel if i < fp64 else
                                    "void at::native::elementwise_kernel<CUDAFunctor_add<float>>()")
                for i, x in enumerate(chain(fp64 + fp32, kernel_ns=fp64_ns, queued=True))]
    return with_device(document(events_for(launches)), H100)


def test_a_default_dtype_of_float64_is_priced_as_the_fp64_kernels_taking_half_their_time(tmp_path):
    lv = _predict(tmp_path, _mixed(fp64=40, fp32=0), DROP_FLOAT64)
    a = lv.assumption
    assert a.count == 40 and a.kernel_share == 1.0
    assert (a.fp64_tflops, a.fp32_tflops) == (67, 67)
    assert 0.5 <= lv.predicted_ratio <= 0.56      # device-bound: the span follows the kernels, 2 µs gaps stay


def test_a_compute_bound_fp64_gemm_keeps_its_flops_at_the_fp32_rate_not_half_its_time(tmp_path):
    """An fp64 GEMM on the H100's fp64 tensor cores (67 TFLOP/s) runs in fp32 on the CUDA cores (67 TFLOP/s, TF32 off
    by default): 137 GFLOP in 3 ms takes no less than 137 GFLOP at FP32_GEMM_SHARE of 67 TFLOP/s (2.7 ms), not 1.5."""
    launches = [dataclasses.replace(x, op="aten::mm", kernel="sm90_xmma_gemm_f64f64_f64f64_f64_nn_n_tilesize64x64x16")
                for x in chain(10, kernel_ns=3 * MS, queued=True)]
    events = events_for(launches)
    for e in events:
        if e.get("cat") == "cpu_op":
            e["args"]["Input Dims"], e["args"]["Input type"] = [[4096, 4096], [4096, 4096]], ["double", "double"]
    lv = _predict(tmp_path, with_device(document(events), H100), DROP_FLOAT64)
    floor = 2 * 4096 ** 3 / (67e12 * drop_float64.FP32_GEMM_SHARE)
    assert lv.assumption.count == 10
    assert 0.95 * floor / 3e-3 <= lv.predicted_ratio <= 1.0


def test_a_loss_kept_in_double_is_no_float64_to_drop(tmp_path):
    """Two fp64 kernels (a loss, a reduction) beside 60 fp32 ones: under FP64_SHARE of the kernel time."""
    lv = _predict(tmp_path, _mixed(fp64=2, fp32=60), DROP_FLOAT64)
    assert lv.assumption.count == 0 and lv.assumption.unpriced == "minor" and lv.predicted_ratio == 1.0
    assert "kept in double" in drop_float64.says(lv.assumption)


def test_kernel_names_say_double_only_as_a_type():
    assert drop_float64.name_says("void regular_fft<128u, EPT<8u>, unsigned int, double, HostConfig>()") == "fp64"
    assert drop_float64.name_says("sm90_xmma_gemm_f64f64_f64f64_f64_tn_n_tilesize32x32x32") == "fp64"
    assert drop_float64.name_says("void k<c10::complex<double> >(c10::complex<double>*)") == "fp64"
    assert drop_float64.name_says("cutlass_gemm_DoubleBuffer_sm80<float>") == "other"
    assert drop_float64.name_says("void at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)") is None
    # fused AdamW takes lr and betas as double scalars beside float tensors: read from its op, not its name
    assert drop_float64.name_says("void multi_tensor_apply_kernel<FusedOptimizerTensorListMetadata<4>, "
                                  "FusedAdamMathFunctor<float, 4, (ADAM_MODE)1, false>, float const*, double, "
                                  "double, double, double, double, bool, float const*, float const*>()") is None


def test_an_untyped_kernel_is_fp64_by_its_ops_tensors_not_by_a_python_float_argument(tmp_path):
    """A copy kernel names no type: its op's complex<double> tensors say fp64; a dropout's `p`, recorded as a
    dimensionless `double` beside a float tensor, does not."""
    launches = steady(20, 100 * US, kernel_ns=200 * US, gap=2 * US,
                      kernel="void at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)")
    ev = events_for(launches)
    for e in ev:
        if e["cat"] == "cpu_op":
            e["name"] = "aten::copy_"
            e["args"]["Input Dims"] = [[64, 64], [64, 64], []]
            e["args"]["Input type"] = ["c10::complex<double>", "c10::complex<double>", "Scalar"]
    assert _predict(tmp_path, with_device(document(ev), H100), DROP_FLOAT64).assumption.count == 20
    for e in ev:
        if e["cat"] == "cpu_op":
            e["name"] = "aten::dropout"
            e["args"]["Input Dims"] = [[64, 64], [], []]
            e["args"]["Input type"] = ["float", "double", "bool"]
    assert _predict(tmp_path, with_device(document(ev), H100), DROP_FLOAT64).assumption.count == 0


# --- convert_on_gpu ------------------------------------------------------------------------------------------------

BATCH = [128, 3, 224, 224]
NUMEL = 128 * 3 * 224 * 224


def _host_conversion_then_copy(steps: int = 2, *, narrow: str = "unsigned char", target: str = "6",
                               copy_bytes: int = NUMEL * 4, conversion_launches: bool = False) -> dict:
    """Each step: uint8 images converted to fp32 on the host (aten::to, 4.5 ms), scaled there (aten::div_, 1.1 ms;
    the 255 wrapped as a 0-dim tensor first), then copied from pageable memory (11 ms, the call holding the host)
    and 30 kernels of 300 µs."""
    ev, t, ext, corr = [], 100 * US, 1, 5000
    for step in range(steps):
        a = [op("aten::to", t, t + 4500 * US, ext, dims=[BATCH, [], [], [], []],
                types=[narrow, "Scalar", "Scalar", "Scalar", ""], **{"Concrete Inputs": ["", target, "False",
                                                                                        "False", ""]}),
             op("aten::_to_copy", t + 5 * US, t + 4495 * US, ext + 1, dims=[BATCH], types=[narrow]),
             op("aten::copy_", t + 40 * US, t + 4490 * US, ext + 2, dims=[BATCH, BATCH, []],
                types=["float", narrow, "Scalar"])]
        if conversion_launches:
            a += [call("cudaLaunchKernel", t + 50 * US, t + 60 * US, corr + 3, ext + 2),
                  gpu("void convert_kernel<float>()", t + 70 * US, t + 200 * US, corr + 3)]
        d0 = t + 4600 * US
        a += [op("aten::div_", d0, d0 + 1100 * US, ext + 3, dims=[BATCH, []], types=["float", "long int"]),
              op("aten::to", d0 + 1120 * US, d0 + 1150 * US, ext + 4, dims=[[], [], [], [], []],
                 types=["long int", "Scalar", "Scalar", "Scalar", ""])]
        c0 = d0 + 1300 * US
        a += [op("aten::to", c0, c0 + 11 * MS + 100 * US, ext + 5, dims=[BATCH, [], []],
                 types=["float", "Scalar", "Scalar"]),
              op("aten::copy_", c0 + 20 * US, c0 + 11 * MS + 80 * US, ext + 6, dims=[BATCH, BATCH, []],
                 types=["float", "float", "Scalar"]),
              call("cudaMemcpyAsync", c0 + 30 * US, c0 + 11 * MS + 50 * US, corr, ext + 6),
              gpu("Memcpy HtoD (Pageable -> Device)", c0 + 60 * US, c0 + 11 * MS + 40 * US, corr, cat="gpu_memcpy",
                  bytes=copy_bytes),
              call("cudaStreamSynchronize", c0 + 11 * MS + 55 * US, c0 + 11 * MS + 60 * US, corr + 1, ext + 6)]
        ev += a
        launches = steady(30, c0 + 11 * MS + 200 * US, kernel_ns=300 * US, gap=3 * US)
        ev += events_for(launches, first_id=10_000 + step * 100)
        t, ext, corr = launches[-1].gpu_end + 50 * US, ext + 10, corr + 10
    return with_device(document(ev), H100)


def test_a_host_conversion_before_the_copy_is_priced_as_the_narrow_bytes_copied_and_the_host_freed(tmp_path):
    lv = _predict(tmp_path, _host_conversion_then_copy(), CONVERT_ON_GPU)
    a = lv.assumption
    assert a.count == 2 and (a.from_dtype, a.to_dtype) == ("uint8", "fp32")
    assert a.nbytes == 2 * NUMEL * 4 and a.narrow_bytes == 2 * NUMEL
    assert set(a.ops) == {"aten::to", "aten::div_"}
    assert 9 * MS <= a.host_ns <= 11.2 * MS            # 2 x (4.5 + 1.1 ms), less one dispatch each
    # before: ~26 ms a step (5.6 host + 11 copy + 9 kernels); the host's 5.6 ms and 3/4 of the copy go
    assert 0.45 <= lv.predicted_ratio <= 0.70


def test_a_copy_of_another_tensor_than_the_converted_one_is_not_this_construct(tmp_path):
    doc = _host_conversion_then_copy(copy_bytes=NUMEL * 4 + 4096)
    assert _predict(tmp_path, doc, CONVERT_ON_GPU).assumption.count == 0


def test_a_narrowing_conversion_on_the_host_is_not_this_construct(tmp_path):
    """float -> half on the host halves the bytes already: copying the float would move more."""
    doc = _host_conversion_then_copy(narrow="float", target="5", copy_bytes=NUMEL * 2)
    assert _predict(tmp_path, doc, CONVERT_ON_GPU).assumption.count == 0


def test_a_conversion_that_launches_gpu_work_is_on_the_device_already(tmp_path):
    doc = _host_conversion_then_copy(conversion_launches=True)
    assert _predict(tmp_path, doc, CONVERT_ON_GPU).assumption.count == 0


# --- no_checkpointing ----------------------------------------------------------------------------------------------

def _training_step(recompute: bool, layers: int = 4, forward=("aten::linear", "aten::layer_norm"),
                   backward=("aten::native_layer_norm_backward", "aten::mm")) -> dict:
    """A forward of `layers` x (linear, layer_norm) on the main thread, then a backward on autograd's thread: per
    layer an evaluate_function node which (checkpointed) first runs the layer's linear and layer_norm again, then
    its own backward ops (mm, native_layer_norm_backward); each op holds the host 130 µs and launches one 100 µs
    kernel."""
    ev, ext, corr = [], 1, 1000
    t = 100 * US

    def launching(name: str, t0: int, tid: int) -> int:
        nonlocal ext, corr
        ev.extend([op(name, t0, t0 + 130 * US, ext, tid=tid),
                   call("cudaLaunchKernel", t0 + 20 * US, t0 + 30 * US, corr, ext, tid=tid),
                   gpu(f"void k_{name.split('::')[1]}<float>()", t0 + 35 * US, t0 + 135 * US, corr)])
        ext, corr = ext + 1, corr + 1
        return t0 + 140 * US

    for _ in range(layers):
        for name in forward:
            t = launching(name, t, 1)
    t += 50 * US
    for _ in range(layers):
        node_start = t
        if recompute:
            t += 5 * US
            for name in forward:
                t = launching(name, t, BACKWARD_TID)
        for name in backward:
            t = launching(name, t, BACKWARD_TID)
        ev.append(op("autograd::engine::evaluate_function: NativeLayerNormBackward0", node_start, t + 5 * US,
                     tid=BACKWARD_TID))
        t += 10 * US
    return with_device(document(ev), H100)


def test_a_forward_recomputed_inside_the_backward_is_priced_as_that_work_gone(tmp_path):
    lv = _predict(tmp_path, _training_step(recompute=True), NO_CHECKPOINTING)
    a = lv.assumption
    assert a.count == 4 and a.forward_ops == 8 and a.kernels == 8
    assert a.gpu_ns == 8 * 100 * US
    # 24 ops of 140 µs end to end before (host-bound); the 8 recomputed ones go: about a third of the span
    assert 0.62 <= lv.predicted_ratio <= 0.72


def test_a_backward_without_a_recomputed_forward_counts_nothing(tmp_path):
    lv = _predict(tmp_path, _training_step(recompute=False), NO_CHECKPOINTING)
    assert lv.assumption.count == 0 and lv.predicted_ratio == 1.0


def test_one_layer_recomputed_once_is_no_checkpointed_stack(tmp_path):
    """A single stretch (a custom autograd.Function calling a forward op in its backward) is not the construct."""
    assert _predict(tmp_path, _training_step(recompute=True, layers=1), NO_CHECKPOINTING).assumption.count == 0


# Hugging Face's GPT-2: ln_2, then its MLP written as Conv1D (addmm) and a tanh-approximated GELU by its formula
GPT2_MLP = ("aten::layer_norm", "aten::addmm", "aten::mul", "aten::tanh")


def test_a_recomputed_mlp_after_the_last_norm_is_inside_the_recomputed_forward(tmp_path):
    """The stretch runs to the last op only a forward calls: a linear as addmm and the tanh of a GELU's formula are
    such ops (their backward formulas call mm and tanh_backward), so the MLP recomputed after ln_2 is priced too
    (checkpoint_gpt2_train on an H100: 0.97 predicted while only the norms' stretch counted, 0.85 measured)."""
    lv = _predict(tmp_path, _training_step(recompute=True, forward=GPT2_MLP,
                                           backward=("aten::tanh_backward", "aten::mm")), NO_CHECKPOINTING)
    # (the forward-only ops counted, the mul between them inside the stretch: its kernel goes too)
    assert lv.assumption.count == 4 and lv.assumption.forward_ops == 12 and lv.assumption.kernels == 16


def test_a_backward_calling_mm_and_tanh_backward_recomputes_nothing(tmp_path):
    lv = _predict(tmp_path, _training_step(recompute=False, forward=GPT2_MLP,
                                           backward=("aten::tanh_backward", "aten::mm", "aten::mul")),
                  NO_CHECKPOINTING)
    assert lv.assumption.count == 0 and lv.predicted_ratio == 1.0
