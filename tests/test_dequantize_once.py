"""A quantized weight dequantized before every product (bitsandbytes' MatMul4Bit: fill, the scales' dequantize, their
offset, the weight's kDequantizeBlockwise, its cast to the activations' dtype, then the GEMM) is a knob: dequantize
once, or fuse the dequantize into the product (levers/dequantize_once). transformer_nuggets' qlora bench on an A100
spent 49% of its kernel time so, and its Next proposed "remove or defer the syncs" (the bench's own timer), then faster
kernels with ncu. Hand-built traces."""
from __future__ import annotations

from kineto_factory import call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.voice.report import five_lines
from tracetriage.analyzers.whatif import predict as whatif

US = 1_000
GEMM = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"
MATERIALISE = [("aten::fill_", "void at::native::vectorized_elementwise_kernel<4, FillFunctor<float>>()", 5),
               (None, "void kDequantizeBlockwise<float, 512, 64, 8, 0>(float*, unsigned char*, float*, float*)", 7),
               ("aten::add_", "void at::native::elementwise_kernel<128, 2, CUDAFunctor_add<float>>()", 7),
               (None, "void kDequantizeBlockwise<__half, 512, 64, 8, 2>(float*, unsigned char*, float*, __half*)", 200),
               ("aten::copy_", "void at::native::unrolled_elementwise_kernel<direct_copy_kernel_cuda>()", 226)]


def _qlora(tmp_path, products_per_op: int = 1, n_ops: int = 12):
    """n_ops quantized linears, each an op 'MatMul4Bit' launching the weight's materialisation then
    `products_per_op` GEMMs of 400 µs (each its own aten::mm with a cuBLAS workspace memset)."""
    ev, k, host, dev = [], 1, 0, 20 * US
    for _ in range(n_ops):
        t0 = host
        for name, kernel, us in MATERIALISE:
            if name:
                ev.append(op(name, host, host + 8 * US, ext=k))
            ev += [call("cudaLaunchKernel", host + 2 * US, host + 6 * US, k, k), gpu(kernel, dev, dev + us * US, k)]
            dev, host, k = dev + us * US + 2 * US, host + 10 * US, k + 1
        for _ in range(products_per_op):
            ev += [op("aten::mm", host, host + 12 * US, ext=k),
                   call("cudaMemsetAsync", host + 1 * US, host + 3 * US, k, k),
                   gpu("Memset (Device)", dev, dev + 2 * US, k, cat="gpu_memset"),
                   call("cudaLaunchKernel", host + 4 * US, host + 10 * US, k + 1, k),
                   gpu(GEMM, dev + 3 * US, dev + 403 * US, k + 1)]
            dev, host, k = dev + 405 * US, host + 15 * US, k + 2
        ev.append(op("MatMul4Bit", t0 - 1 * US, host))
        host += 5 * US
    return write(tmp_path / "qlora.json.gz", document(ev))


def test_the_weights_materialisation_before_each_product_is_priced_away(tmp_path):
    lever = whatif.predict_file(_qlora(tmp_path), levers=["dequantize_once"]).lever("dequantize_once")
    assert lever.detail["products"] == 12
    assert lever.detail["materialising_ns"] == 12 * 445 * US
    assert 0.45 < lever.predicted_ratio < 0.6          # 445 of ~850 µs a product go; the GEMMs and memsets stay


def test_the_next_turns_the_dequantize_knob(tmp_path):
    a = analyze_trace(load(_qlora(tmp_path)))
    assert a.next_experiment.lever.lever == "dequantize_once"
    assert "stop dequantizing the weights before every matmul" in five_lines(a)[4]
    assert claims.check(serialize.report(a)) == []     # (its saving within what its edit takes out, host included)


def test_an_op_around_more_products_than_dequantizes_is_no_quantized_linear(tmp_path):
    """One dequantize beside three products in one op (a compiled region, a whole layer): not one product a weight."""
    path = _qlora(tmp_path, products_per_op=3)
    lever = whatif.predict_file(path, levers=["dequantize_once"]).lever("dequantize_once")
    assert lever.detail["products"] == 0
