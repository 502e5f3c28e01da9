import json
import sys

import pytest

from tracetriage.analyzers.analyses.peaks import DevicePeaks, lookup, table
from tracetriage.analyzers.loading.side_inputs import default_ceilings_path, load_ceilings
from tracetriage.analyzers.model.dtypes import DTYPE_BYTES, normalise_dtype

H200_CEILINGS = {
    "device_name": "NVIDIA H200",
    "copy_gbps": {"d2d": 4300.0, "h2d_pinned": 55.0, "d2h_pinned": 55.0},
    "matmul_tflops": {"bf16": 780.0, "fp16": 760.0, "tf32": 400.0, "fp32": 50.0},
    "measured_at": "2026-01-01T00:00:00Z",
    "torch": "2.13.0",
}


def test_h200_bf16_ridge_is_about_206_flop_per_byte():
    peaks = lookup("NVIDIA H200")
    assert peaks.source == "datasheet"
    assert peaks.bytes_per_s == pytest.approx(4.8e12)
    assert peaks.flops("bf16") == pytest.approx(989.5e12)
    assert peaks.ridge("bf16") == pytest.approx(206.1, abs=0.1)


@pytest.mark.parametrize(
    "device_name, family, tb_per_s, bf16_tflops",
    [
        ("NVIDIA H200", "H200 SXM", 4.8, 989.5),
        ("NVIDIA H100 80GB HBM3", "H100 SXM", 3.35, 989.5),
        ("NVIDIA H100 PCIe", "H100 PCIe", 2.0, 756),
        ("NVIDIA A100-SXM4-40GB", "A100 SXM 40GB", 1.555, 312),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB", 2.039, 312),
        ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB", 1.935, 312),
        ("NVIDIA L4", "L4", 0.3, 121),
        ("Tesla T4", "T4", 0.32, 8.1),
        ("NVIDIA A10G", "A10G", 0.6, 70),
        ("Tesla V100-SXM2-16GB", "V100 SXM2", 0.9, 15.7),
        ("Tesla V100-SXM2-32GB", "V100 SXM2", 0.9, 15.7),
        ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090", 1.008, 165.2),
        ("NVIDIA GeForce RTX 3090", "GeForce RTX 3090", 0.936, 71),
        ("NVIDIA H800", "H800 SXM", 3.35, 989.5),
        ("NVIDIA B200", "B200", 7.7, 2250),
        # devices users have that the table lacked: a GH200 trace (marcalph/kernelforge) had its TF32 and bf16
        # levers say "no fp32 GEMM" over 15 fp32 GEMMs holding 86% of its GPU time
        ("NVIDIA GH200 480GB", "GH200 (96 GB HBM3)", 4.0, 989.5),
        ("NVIDIA GH200 144G HBM3e", "GH200 (144 GB HBM3e)", 4.9, 989.5),
        ("NVIDIA H20", "H20", 4.0, 148),
        ("NVIDIA L40", "L40", 0.864, 181.05),
        ("NVIDIA L40S", "L40S", 0.864, 362.05),
        ("NVIDIA A40", "A40", 0.696, 149.7),
        ("NVIDIA A30", "A30", 0.933, 165),
        ("NVIDIA H100 NVL", "H100 NVL", 3.9, 835.5),
        ("AMD Instinct MI300X", "MI300X", 5.3, 1307.4),
        ("AMD Instinct MI300X VF", "MI300X", 5.3, 1307.4),   # as a virtual function (cloud VM) reports it
        ("AMD Instinct MI325X", "MI325X", 6.0, 1307.4),
        # torch sees each GCD of an MI250/MI250X as a device: half the package's figures
        ("AMD Instinct MI250X", "MI250X (one GCD)", 1.6384, 191.5),
        ("AMD Instinct MI250X / MI250", "MI250 (one GCD)", 1.6384, 181.05),  # ROCm's shared name: the lower part
        ("AMD Instinct MI210", "MI210", 1.6384, 181.0),
        ("AMD Instinct MI300A", "MI300A", 5.3, 980.6),
        ("NVIDIA GeForce RTX 2080 Ti", "GeForce RTX 2080 Ti", 0.616, 13.4),   # no bf16 tensor cores: fp32 rate
        ("NVIDIA RTX A6000", "RTX A6000", 0.768, 154.8),
        ("NVIDIA RTX A4000", "RTX A4000", 0.448, 76.7),
        ("Quadro GP100", "Quadro GP100", 0.717, 10.3),
        # a device whose name says nothing, named by the properties the trace records beside it
        ("unnamed device (compute 9.4, 304 multiprocessors, 192 GB)", "MI300X", 5.3, 1307.4),
        ("AMD Radeon Graphics (compute 9.0, 104 multiprocessors, 64 GB)", "MI210", 1.6384, 181.0),
    ],
)
def test_device_names_as_torch_reports_them_match_their_family(
        device_name, family, tb_per_s, bf16_tflops):
    peaks = lookup(device_name)
    assert peaks.name == family
    assert peaks.bytes_per_s == pytest.approx(tb_per_s * 1e12)
    assert peaks.flops("bf16") == pytest.approx(bf16_tflops * 1e12)


@pytest.mark.parametrize("device_name", [
    None, "", "cpu", "NVIDIA RTX 6000 Ada Generation", "NVIDIA GB200", "NVIDIA GeForce RTX 3090 Ti",
    "NVIDIA GeForce RTX 4090 Laptop GPU", "AMD Radeon Graphics", "ARTEMIS",
])
def test_unknown_device_has_no_peaks(device_name):
    assert lookup(device_name) is None


def test_an_unnamed_nvidia_hopper_is_not_taken_for_an_amd_part():
    # compute 9.0 is an H100's compute capability as well as gfx90a's: the multiprocessors tell them apart
    assert lookup("unnamed device (compute 9.0, 132 multiprocessors, 80 GB)") is None


@pytest.mark.parametrize("device_name, sheet", [
    ("NVIDIA H200", "NVIDIA H200 Tensor Core GPU datasheet"),
    ("NVIDIA GeForce RTX 2080 Ti", "NVIDIA Turing GPU architecture whitepaper"),
    ("AMD Instinct MI300X", "AMD Instinct MI300X datasheet"),
    ("NVIDIA GH200 480GB", "NVIDIA GH200 Grace Hopper Superchip datasheet"),
    ("NVIDIA H20", "NVIDIA HGX H20 specification, as published in the press (no public datasheet)"),
])
def test_datasheet_peaks_name_their_source_document(device_name, sheet):
    assert lookup(device_name).sheet == sheet


def test_measured_ceilings_keep_the_datasheet_as_the_physical_limit():
    pk = lookup("NVIDIA H200", H200_CEILINGS)
    assert pk.bytes_per_s == pytest.approx(4300e9)             # what the report compares against
    assert pk.limit_bytes_per_s() == pytest.approx(4800e9)     # what no kernel can pass
    assert pk.limit_flops("bf16") == pytest.approx(989.5e12)


def test_every_row_of_the_table_names_its_source_document():
    assert all(row.sheet for row in table().values())


def test_similar_names_do_not_collide():
    # "A10" is a prefix of "A100"; "L4" of "L40S".
    assert lookup("NVIDIA A10").name == "A10"
    assert lookup("NVIDIA A100-SXM4-40GB").name == "A100 SXM 40GB"
    assert lookup("NVIDIA L40S").name == "L40S"
    assert lookup("NVIDIA H200 NVL").name == "H200 NVL"
    assert lookup("NVIDIA GH200 480GB").name.startswith("GH200")      # not an H200
    assert lookup("NVIDIA H20").name == "H20" and lookup("NVIDIA L40").name == "L40"


def test_fp32_is_the_cuda_core_rate_and_tf32_only_when_asked():
    peaks = lookup("NVIDIA H200")
    assert peaks.flops("fp32") == pytest.approx(67e12)
    assert peaks.flops("float") == pytest.approx(67e12)  # Kineto's spelling
    assert peaks.flops("tf32") == pytest.approx(494.5e12)


def test_unknown_dtype_falls_back_to_fp32():
    peaks = lookup("NVIDIA H200")
    assert peaks.flops("long int") == peaks.flops("fp32")
    assert peaks.flops("Scalar") == peaks.flops("fp32")
    assert peaks.flops(None) == peaks.flops("fp32")


def test_cards_without_bf16_tensor_cores_run_bf16_at_the_fp32_rate():
    t4 = lookup("Tesla T4")
    assert t4.flops("bf16") == t4.flops("fp32") == pytest.approx(8.1e12)
    assert t4.flops("fp16") == pytest.approx(65e12)


def test_fp8_on_a_card_without_fp8_falls_back_to_the_16_bit_rate():
    a100 = lookup("NVIDIA A100-SXM4-80GB")
    assert a100.flops("fp8") == a100.flops("bf16")
    assert lookup("NVIDIA H200").flops("c10::Float8_e4m3fn") == pytest.approx(1979e12)


def test_consumer_cards_use_fp32_accumulate_tensor_rates():
    # RTX 4090: 330.3 TFLOP/s is fp16 with fp16 accumulate; PyTorch GEMMs accumulate
    # in fp32, which runs at half that.
    assert lookup("NVIDIA GeForce RTX 4090").flops("fp16") == pytest.approx(165.2e12)
    assert lookup("NVIDIA GeForce RTX 3090").flops("fp16") == pytest.approx(71e12)


def test_measured_ceilings_take_precedence_over_datasheet():
    peaks = lookup("NVIDIA H200", H200_CEILINGS)
    assert peaks.bytes_per_s == pytest.approx(4.3e12)  # d2d, read + written
    assert peaks.flops("bf16") == pytest.approx(780e12)
    assert peaks.flops("tf32") == pytest.approx(400e12)
    assert peaks.flops("fp32") == pytest.approx(50e12)
    assert peaks.flops("fp8") == pytest.approx(1979e12)  # not measured: datasheet
    assert peaks.source == "measured+datasheet"
    assert peaks.ridge("bf16") == pytest.approx(780 / 4.3, rel=1e-9)


def test_partial_ceilings_replace_only_the_fields_they_measure():
    ceilings = {"device_name": "NVIDIA H200", "matmul_tflops": {"bf16": 700.0}}
    peaks = lookup("NVIDIA H200", ceilings)
    assert peaks.bytes_per_s == pytest.approx(4.8e12)
    assert peaks.flops("bf16") == pytest.approx(700e12)
    assert peaks.source == "measured+datasheet"


def test_ceilings_for_another_device_are_ignored():
    peaks = lookup("NVIDIA H100 80GB HBM3", H200_CEILINGS)
    assert peaks.source == "datasheet"
    assert peaks.bytes_per_s == pytest.approx(3.35e12)
    assert peaks.flops("bf16") == pytest.approx(989.5e12)


def test_unknown_device_with_its_own_ceilings_gets_measured_peaks():
    ceilings = dict(H200_CEILINGS, device_name="NVIDIA GB300")
    peaks = lookup("NVIDIA GB300", ceilings)
    assert peaks.source == "measured"
    assert peaks.flops("bf16") == pytest.approx(780e12)
    assert lookup("NVIDIA GB300", {"device_name": "NVIDIA GB300",
                                  "matmul_tflops": {"bf16": 1.0}}) is None


def test_load_ceilings_reads_the_capture_format(tmp_path):
    path = tmp_path / "ceilings.json"
    path.write_text(json.dumps(H200_CEILINGS))
    ceilings = load_ceilings(path)
    assert ceilings["device_name"] == "NVIDIA H200"
    assert ceilings["copy_gbps"]["d2d"] == 4300.0
    assert ceilings["matmul_tflops"] == {"bf16": 780.0, "fp16": 760.0, "tf32": 400.0,
                                         "fp32": 50.0}
    assert lookup("NVIDIA H200", ceilings).flops("bf16") == pytest.approx(780e12)


@pytest.mark.parametrize("content, message", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"copy_gbps": {"d2d": 1}}', "'device_name' must be a non-empty string"),
    ('{"device_name": "NVIDIA H200", "copy_gbps": {"d2d": "fast"}}',
     "'copy_gbps.d2d' must be a positive number"),
    ('{"device_name": "NVIDIA H200", "matmul_tflops": {"bf16": -1}}',
     "'matmul_tflops.bf16' must be a positive number"),
    ('{"device_name": "NVIDIA H200", "matmul_tflops": {"fp7": 1}}',
     "unknown dtype 'fp7'"),
    ('{"device_name": "NVIDIA H200", "matmul_tflops": [1]}',
     "'matmul_tflops' must be an object"),
])
def test_malformed_ceilings_raise_a_clear_value_error(tmp_path, content, message):
    path = tmp_path / "ceilings.json"
    path.write_text(content)
    with pytest.raises(ValueError, match="ceilings.json") as info:
        load_ceilings(path)
    assert message in str(info.value)


def test_default_ceilings_path_honours_the_cache_dir_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("TRACETRIAGE_CACHE_DIR", str(tmp_path))
    assert default_ceilings_path() == tmp_path / "ceilings.json"
    monkeypatch.delenv("TRACETRIAGE_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_ceilings_path() == tmp_path / "home" / ".cache" / "tracetriage" / "ceilings.json"


@pytest.mark.parametrize("kineto, canonical, nbytes", [
    ("float", "fp32", 4), ("double", "fp64", 8), ("c10::Half", "fp16", 2),
    ("c10::BFloat16", "bf16", 2), ("c10::Float8_e4m3fn", "fp8", 1),
    ("c10::Float8_e5m2", "fp8", 1), ("long int", "int64", 8), ("int", "int32", 4),
    ("bool", "bool", 1), ("unsigned char", "uint8", 1), ("signed char", "int8", 1),
    ("c10::complex<float>", "complex64", 8),
])
def test_kineto_type_names_normalise_to_canonical_dtypes(kineto, canonical, nbytes):
    assert normalise_dtype(kineto) == canonical
    assert DTYPE_BYTES[canonical] == nbytes


@pytest.mark.parametrize("not_a_dtype", ["", "Scalar", "ScalarList", "TensorList",
                                         "GenericList", None, 3])
def test_non_tensor_input_types_have_no_dtype(not_a_dtype):
    assert normalise_dtype(not_a_dtype) is None


def test_torch_spellings_and_canonical_names_are_accepted():
    assert normalise_dtype("torch.bfloat16") == "bf16"
    assert normalise_dtype("float16") == "fp16"
    assert normalise_dtype("bf16") == "bf16"
    assert normalise_dtype("tf32") == "tf32"


def test_peaks_module_does_not_import_torch():
    import subprocess
    from pathlib import Path
    code = ("import sys, tracetriage.analyzers.analyses.peaks, tracetriage.analyzers.analyses.opcost; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "False"


def test_device_peaks_is_immutable():
    peaks = lookup("NVIDIA L4")
    assert isinstance(peaks, DevicePeaks)
    with pytest.raises(AttributeError):
        peaks.bytes_per_s = 1.0


@pytest.mark.parametrize("device_names, event_names, family", [
    (["ARTEMIS"], [], "MTIA"),                                              # HTA's MTIA inference trace
    ([], ["aten::mul", "runFunction - job_prep_and_submit_for_execution"], "MTIA"),  # no deviceProperties
    (["NVIDIA H100 80GB HBM3"], ["cudaLaunchKernel"], None),
    (["AMD Instinct MI300X"], ["hipLaunchKernel"], None),
    ([], [], None),
])
def test_non_gpu_accelerators_are_named_for_what_they_are(device_names, event_names, family):
    from tracetriage.analyzers.analyses.peaks import non_gpu_accelerator

    assert non_gpu_accelerator(device_names, event_names) == family


def _fp32_gemms(tmp_path, device_name: str):
    """Three fp32 GEMMs on CUDA cores (the kernel name cuBLAS gives them on Hopper), on a named device."""
    import kineto_factory as kf

    ev, t = [], 1_000_000
    for corr in (1, 2, 3):
        ev += [kf.op("aten::mm", t, t + 30_000, corr),
               kf.call("cudaLaunchKernel", t + 5_000, t + 25_000, corr, corr),
               kf.gpu("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4",
                      t + 30_000, t + 1_030_000, corr)]
        t += 1_100_000
    doc = kf.document(ev)
    doc["deviceProperties"][0]["name"] = device_name
    return kf.write(tmp_path / "gemms.json.gz", doc)


@pytest.mark.parametrize("device_name, said", [
    ("NVIDIA GH200 480GB", "the 3 fp32 GEMM/convolution kernels"),          # in the table now: priced
    ("NVIDIA RTX 6000 Ada Generation",                                        # not in the table: the true reason
     "3 fp32 GEMM/convolution kernels on CUDA cores in this trace, but no peak table entry for NVIDIA RTX 6000 Ada "
     "Generation"),
    ("Tesla V100-SXM2-16GB",                                                  # no TF32 tensor cores
     "3 fp32 GEMM/convolution kernels on CUDA cores in this trace, but Tesla V100-SXM2-16GB runs TF32 no faster "
     "than fp32 (15.7 TFLOP/s both"),
    ("NVIDIA GeForce RTX 3090",                                               # TF32 tensor cores at the fp32 rate
     "3 fp32 GEMM/convolution kernels on CUDA cores in this trace, but NVIDIA GeForce RTX 3090 runs TF32 no faster "
     "than fp32 (35.6 TFLOP/s both"),
])
def test_the_tf32_lever_says_why_it_prices_no_fp32_gemm_it_found(tmp_path, device_name, said):
    from tracetriage.analyzers.loading.load import load
    from tracetriage.analyzers.whatif.levers import TF32, allow_tf32
    from tracetriage.analyzers.whatif.predict import predict

    p = predict(load(str(_fp32_gemms(tmp_path, device_name))), [TF32]).levers[0]
    words = allow_tf32.SPEC.says(p.assumption)
    assert words.startswith(said) and "no fp32 GEMM" not in words
