import pytest

from tracetriage.analyzers.analyses.opcost import (
    OpCost,
    causal_pairs,
    matmul_shapes_bytes,
    matmul_shapes_flops,
    op_cost,
)

# Real cpu_op args, copied from a trace exported by torch 2.13 (CPU) under
# torch.profiler.profile(record_shapes=True): (name, Input Dims, Input type,
# Concrete Inputs).
REAL = {
    "mm": ("aten::mm", [[8, 16], [16, 32]], ["float", "float"], ["", ""]),
    "mm_bf16": ("aten::mm", [[8, 16], [16, 32]], ["c10::BFloat16", "c10::BFloat16"],
                ["", ""]),
    "addmm": ("aten::addmm", [[32], [8, 16], [16, 32], [], []],
              ["float", "float", "float", "Scalar", "Scalar"], ["", "", "", "1", "1"]),
    "linear_no_bias": ("aten::linear", [[8, 16], [32, 16], []], ["float", "float", ""],
                       ["", "", ""]),
    "bmm": ("aten::bmm", [[4, 8, 16], [4, 16, 5]], ["float", "float"], ["", ""]),
    "sdpa_causal_bf16": (
        "aten::scaled_dot_product_attention",
        [[2, 3, 10, 8], [2, 3, 12, 8], [2, 3, 12, 8], [], [], [], [], []],
        ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "Scalar", "Scalar", "",
         "Scalar"],
        ["", "", "", "", "0.", "True", "", "False"]),
    "flash_cpu": (
        "aten::_scaled_dot_product_flash_attention_for_cpu",
        [[2, 3, 10, 8], [2, 3, 12, 8], [2, 3, 12, 8], [], [], [], []],
        ["float", "float", "float", "Scalar", "Scalar", "", ""],
        ["", "", "", "0.", "False", "", ""]),
    # x * 2: the Python number arrives as a 0-dim "long int" tensor, not a Scalar.
    "mul_number": ("aten::mul", [[8, 16], []], ["float", "long int"], ["", ""]),
    "add_": ("aten::add_", [[8, 16], [8, 16], []], ["float", "float", "Scalar"],
             ["", "", "1"]),
    "add_broadcast": ("aten::add", [[8, 16], [16], []], ["float", "float", "Scalar"],
                      ["", "", "1"]),
    "where_scalar": ("aten::where", [[8, 16], [8, 16], []], ["bool", "float", "Scalar"],
                     ["", "", "0."]),
    "mean_dim0": ("aten::mean", [[8, 16], [], [], []], ["float", "ScalarList", "Scalar", ""],
                  ["", "[0]", "False", ""]),
    "max_dim": ("aten::max", [[8, 16], [], []], ["float", "Scalar", "Scalar"],
                ["", "1", "False"]),
    "sum_out": ("aten::sum", [[8, 16], [], [], [], [16]],
                ["float", "ScalarList", "Scalar", "Scalar", "float"],
                ["", "[0]", "False", "6", ""]),
    "layer_norm": ("aten::layer_norm", [[8, 16], [], [16], [16], [], []],
                   ["float", "ScalarList", "float", "float", "Scalar", "Scalar"],
                   ["", "[16]", "", "", "1.0000000000000001e-05", "True"]),
    "softmax": ("aten::_softmax", [[8, 16], [], []], ["float", "Scalar", "Scalar"],
                ["", "-1", "False"]),
    "embedding": ("aten::embedding", [[32, 16], [1, 3], [], [], []],
                  ["float", "long int", "Scalar", "Scalar", "Scalar"],
                  ["", "", "-1", "False", "False"]),
    "to_bf16": ("aten::_to_copy", [[8, 16], [], [], [], [], [], []],
                ["float", "Scalar", "", "", "", "Scalar", ""],
                ["", "15", "", "", "", "False", ""]),
    "copy_to_bf16": ("aten::copy_", [[8, 16], [8, 16], []],
                     ["c10::BFloat16", "float", "Scalar"], ["", "", "False"]),
    "cat": ("aten::cat", [[[8, 16], [8, 16]], []], ["TensorList", "Scalar"], ["", "0"]),
    "index_select": ("aten::index_select", [[8, 16], [], [2]],
                     ["float", "Scalar", "long int"], ["", "0", ""]),
}


def cost(key, with_concrete=True):
    name, dims, types, concrete = REAL[key]
    return op_cost(name, dims, types, concrete if with_concrete else None)


def test_mm_flops_are_two_mnk():
    c = cost("mm")
    assert c.flops == 2 * 8 * 32 * 16
    assert c.kind == "matmul" and c.dtype == "fp32"
    assert c.bytes == (8 * 16 + 16 * 32 + 8 * 32) * 4  # A, B read; C written


def test_bf16_matmul_moves_half_the_bytes_of_fp32():
    assert cost("mm_bf16").bytes == cost("mm").bytes / 2
    assert cost("mm_bf16").dtype == "bf16"
    assert cost("mm_bf16").intensity == pytest.approx(2 * cost("mm").intensity)


def test_addmm_adds_the_bias_once_per_output():
    c = cost("addmm")
    assert c.flops == 2 * 8 * 32 * 16 + 8 * 32
    assert c.bytes == (32 + 8 * 16 + 16 * 32 + 8 * 32) * 4


def test_linear_without_bias_is_a_plain_matmul():
    assert cost("linear_no_bias").flops == 2 * 8 * 32 * 16


def test_linear_with_bias_folds_leading_dims_into_m():
    c = op_cost("aten::linear", [[2, 5, 16], [32, 16], [32]], ["c10::Half"] * 3)
    assert c.flops == 2 * 10 * 32 * 16 + 10 * 32
    assert c.bytes == (10 * 16 + 32 * 16 + 32 + 10 * 32) * 2


def test_bmm_flops_are_batch_times_two_mnk():
    assert cost("bmm").flops == 4 * 2 * 8 * 5 * 16


def test_matmul_broadcasts_batch_dims():
    c = op_cost("aten::matmul", [[3, 1, 8, 16], [4, 16, 5]], ["float", "float"])
    assert c.flops == matmul_shapes_flops(8, 5, 16, batch=12)


def test_matmul_shape_helpers_agree_with_op_cost():
    c = op_cost("aten::mm", [[64, 128], [128, 256]], ["c10::BFloat16"] * 2)
    assert c.flops == matmul_shapes_flops(64, 256, 128)
    assert c.bytes == matmul_shapes_bytes(64, 256, 128, "bf16")


def test_sdpa_flops_are_four_b_h_lq_lk_d():
    c = cost("flash_cpu")
    assert c.kind == "attention"
    assert c.flops == 4 * 2 * 3 * 10 * 12 * 8
    assert c.bytes == (2 * 3 * 10 * 8 * 2 + 2 * 2 * 3 * 12 * 8) * 4  # q, out; k, v


def test_recorded_is_causal_counts_only_unmasked_pairs():
    c = cost("sdpa_causal_bf16")
    # top-left causal on 10 x 12: query i sees i + 1 keys -> 55 pairs, not 120.
    assert c.flops == 4 * 2 * 3 * 55 * 8
    assert c.dtype == "bf16"


def test_without_concrete_inputs_causal_attention_counts_the_full_square():
    assert cost("sdpa_causal_bf16", with_concrete=False).flops == 4 * 2 * 3 * 10 * 12 * 8


@pytest.mark.parametrize("name, layout_blhd", [
    ("aten::_scaled_dot_product_flash_attention", False),
    ("aten::_scaled_dot_product_efficient_attention", False),
    ("aten::_scaled_dot_product_cudnn_attention", False),
    ("aten::_flash_attention_forward", True),
    ("aten::_efficient_attention_forward", True),
])
def test_gpu_attention_kernels_are_costed_in_their_own_layout(name, layout_blhd):
    B, H, L, D = 1, 8, 128, 64
    shape = [B, L, H, D] if layout_blhd else [B, H, L, D]
    c = op_cost(name, [shape, shape, shape], ["c10::BFloat16"] * 3)
    assert c.flops == 4 * B * H * L * L * D


def test_grouped_query_attention_uses_query_heads_for_flops_and_real_kv_for_bytes():
    c = op_cost("aten::scaled_dot_product_attention",
                [[1, 8, 4, 64], [1, 2, 100, 64], [1, 2, 100, 64]],
                ["c10::BFloat16"] * 3)
    assert c.flops == 4 * 8 * 4 * 100 * 64
    assert c.bytes == (2 * 8 * 4 * 64 + 2 * 2 * 100 * 64) * 2


def test_causal_pairs_match_a_brute_force_count():
    for Lq in range(6):
        for Lk in range(6):
            for offset in range(-6, 7):
                brute = sum(1 for i in range(Lq) for j in range(Lk) if j <= i + offset)
                assert causal_pairs(Lq, Lk, offset) == brute


def test_a_python_number_operand_is_a_zero_dim_tensor_read_once():
    c = cost("mul_number")
    assert c.kind == "elementwise"
    assert c.flops == 128
    assert c.bytes == 128 * 4 + 8 + 128 * 4


def test_in_place_add_writes_into_its_first_input():
    c = cost("add_")
    assert c.bytes == 3 * 128 * 4  # read a, read b, write a


def test_broadcast_operand_is_read_at_its_own_size():
    assert cost("add_broadcast").bytes == (128 + 16 + 128) * 4


def test_where_reads_a_bool_mask_and_writes_the_value_dtype():
    c = cost("where_scalar")
    assert c.dtype == "fp32"
    assert c.bytes == 128 * 1 + 128 * 4 + 128 * 4


def test_transcendental_functions_cost_more_flops_than_an_add():
    x = [[8, 16]], ["float"]
    assert op_cost("aten::silu", *x).flops > op_cost("aten::relu", *x).flops
    assert op_cost("aten::silu", *x).bytes == op_cost("aten::relu", *x).bytes


def test_reduction_output_follows_the_recorded_dims():
    assert cost("mean_dim0").bytes == (128 + 16) * 4
    assert cost("mean_dim0").kind == "reduction"
    assert cost("sum_out").bytes == (128 + 16) * 4


def test_max_over_a_dim_writes_values_and_int64_indices():
    assert cost("max_dim").bytes == 128 * 4 + 8 * 4 + 8 * 8


def test_full_reduction_writes_one_element():
    c = op_cost("aten::sum", [[8, 16], []], ["float", ""])
    assert c.bytes == 128 * 4 + 4


def test_layer_norm_reads_x_and_affine_params_and_writes_y():
    c = cost("layer_norm")
    assert c.kind == "norm"
    assert c.bytes == (2 * 128 + 16 + 16) * 4
    assert 5 * 128 <= c.flops <= 8 * 128


def test_softmax_is_about_five_flops_per_element():
    c = cost("softmax")
    assert c.flops == 5 * 128 and c.bytes == 2 * 128 * 4


def test_embedding_reads_only_the_gathered_rows():
    c = cost("embedding")
    assert c.kind == "embedding" and c.flops == 0
    assert c.bytes == 2 * 3 * 16 * 4 + 3 * 8  # rows read + written, int64 indices


def test_to_copy_uses_the_target_dtype_when_recorded():
    assert cost("to_bf16").bytes == 128 * 4 + 128 * 2
    # Without Concrete Inputs only the source dtype is known: assume unchanged.
    assert cost("to_bf16", with_concrete=False).bytes == 2 * 128 * 4


def test_copy_counts_each_side_at_its_own_dtype():
    c = cost("copy_to_bf16")
    assert c.kind == "copy" and c.flops == 0
    assert c.bytes == 128 * 2 + 128 * 4


def test_cat_reads_and_writes_every_input():
    assert cost("cat").bytes == 2 * 2 * 128 * 4


def test_index_select_moves_the_selected_rows():
    assert cost("index_select").bytes == 2 * 2 * 16 * 4 + 2 * 8


def test_unknown_op_has_no_cost():
    assert op_cost("aten::nonzero", [[8, 16]], ["float"]) is None
    assert op_cost("aten::view", [[8, 16], []], ["float", "ScalarList"]) is None
    assert op_cost("my_kernel", [[8, 16]], ["float"]) is None


def test_missing_shapes_have_no_cost():
    assert op_cost("aten::mm", None, ["float", "float"]) is None
    assert op_cost("aten::mm", [[8, 16], [16, 32]], None) is None


@pytest.mark.parametrize("name, dims, types", [
    ("aten::mm", [[8, 16], [17, 32]], ["float", "float"]),  # K mismatch
    ("aten::mm", [[8, 16]], ["float"]),  # missing operand
    ("aten::mm", [[8, 16], [16, 32]], ["float"]),  # lengths differ
    ("aten::mm", [[8, "16"], [16, 32]], ["float", "float"]),
    ("aten::mm", [[8, -16], [-16, 32]], ["float", "float"]),
    ("aten::mm", [[8, True], [True, 32]], ["float", "float"]),
    ("aten::mm", "[[8, 16], [16, 32]]", ["float", "float"]),
    ("aten::mm", [None, None], [None, None]),
    ("aten::bmm", [[4, 8, 16], [16, 5]], ["float", "float"]),
    ("aten::add", [[8, 16], [7]], ["float", "float"]),  # cannot broadcast
    ("aten::add", [[], []], ["Scalar", "Scalar"]),  # no tensor at all
    ("aten::cat", [[8, 16], []], ["TensorList", "Scalar"]),
    ("aten::scaled_dot_product_attention", [[2, 10, 8], [2, 12, 8], [2, 12, 8]],
     ["float"] * 3),
    ("aten::embedding", [[32], [3]], ["float", "long int"]),
    ("aten::sum", [{"a": 1}], ["float"]),
    (None, [[8, 16]], ["float"]),
])
def test_malformed_dims_never_raise(name, dims, types):
    assert op_cost(name, dims, types) is None


def test_odd_concrete_inputs_are_ignored_not_fatal():
    name, dims, types, _ = REAL["mean_dim0"]
    for concrete in (None, [], ["", "[x]", "", ""], [1, 2, 3, 4], "nope"):
        c = op_cost(name, dims, types, concrete)
        assert isinstance(c, OpCost) and c.flops == 128


def test_name_without_the_aten_prefix_is_accepted():
    assert op_cost("mm", [[8, 16], [16, 32]], ["float", "float"]) == cost("mm")


def test_intensity_is_zero_when_nothing_moves():
    assert OpCost(flops=0.0, bytes=0.0, dtype="fp32", kind="copy").intensity == 0.0
    assert cost("mm").intensity == pytest.approx(8192 / 3584)


# --- convolutions (issue 12, class 5) -------------------------------------------------------
# Args as torch 2.13 (CPU) records them for Conv2d(8, 16, 3, stride=2, padding=1, groups=2) on
# [2, 8, 16, 16], ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1) and
# Conv1d(8, 8, 5, padding=4, dilation=2, groups=8) (depthwise), forward and backward.
CONV = {
    "conv2d_grouped_strided": ("aten::conv2d", [[2, 8, 16, 16], [16, 4, 3, 3], [16], [], [], [], []],
                               ["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar"],
                               ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "2"]),
    "backward_grouped_strided": (
        "aten::convolution_backward",
        [[2, 16, 8, 8], [2, 8, 16, 16], [16, 4, 3, 3], [], [], [], [], [], [], [], []],
        ["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList",
         "Scalar", "ScalarList"],
        ["", "", "", "[16]", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "2", "[True, True, True]"]),
    "transposed": ("aten::conv_transpose2d", [[2, 8, 16, 16], [8, 4, 3, 3], [4], [], [], [], [], []],
                   ["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList"],
                   ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1", "[1, 1]"]),
    "transposed_backward": (
        "aten::convolution_backward",
        [[2, 4, 32, 32], [2, 8, 16, 16], [8, 4, 3, 3], [], [], [], [], [], [], [], []],
        ["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList",
         "Scalar", "ScalarList"],
        ["", "", "", "[4]", "[2, 2]", "[1, 1]", "[1, 1]", "True", "[1, 1]", "1", "[True, True, True]"]),
    "conv1d_dilated_depthwise": ("aten::conv1d", [[2, 8, 16], [8, 1, 5], [8], [], [], [], []],
                                 ["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar"],
                                 ["", "", "", "[1]", "[4]", "[2]", "8"]),
}
# torch 1.9 (the kineto tb_plugin ResNet-50 sample on a V100): no Concrete Inputs at all.
CONV_TORCH19 = {
    "cudnn_convolution": ("aten::cudnn_convolution", [[32, 64, 56, 56], [64, 64, 3, 3], [], [], [], [], [], [], []],
                          ["float", "float", "GenericList", "GenericList", "GenericList", "Int", "Bool", "Bool",
                           "Bool"], None),
    "backward_input": ("aten::cudnn_convolution_backward_input",
                       [[], [32, 2048, 7, 7], [2048, 512, 1, 1], [], [], [], [], [], [], []],
                       ["GenericList", "float", "float", "GenericList", "GenericList", "GenericList", "Int", "Bool",
                        "Bool", "Bool"], None),
    "backward": ("aten::cudnn_convolution_backward",
                 [[32, 512, 7, 7], [32, 2048, 7, 7], [2048, 512, 1, 1], [], [], [], [], [], [], [], []],
                 ["float", "float", "float", "GenericList", "GenericList", "GenericList", "Int", "Bool", "Bool",
                  "Bool", "GenericList"], None),
    "backward_weight": ("aten::cudnn_convolution_backward_weight",
                        [[], [32, 2048, 7, 7], [32, 512, 7, 7], [], [], [], [], [], [], []],
                        ["GenericList", "float", "float", "GenericList", "GenericList", "GenericList", "Int", "Bool",
                         "Bool", "Bool"], None),
}


def test_grouped_strided_conv_counts_its_output_and_group_channels():
    c = op_cost(*CONV["conv2d_grouped_strided"])
    # out 8x8 (stride 2, pad 1); each of 2*16*64 outputs sums 4 channels x 9 taps
    assert c.flops == 2 * 2 * 16 * 64 * 4 * 9
    assert c.bytes == 4 * (2 * 8 * 16 * 16 + 16 * 4 * 9 + 16 + 2 * 16 * 8 * 8)
    assert c.kind == "convolution"


def test_conv_backward_costs_the_input_and_weight_gradients():
    fwd, bwd = op_cost(*CONV["conv2d_grouped_strided"]), op_cost(*CONV["backward_grouped_strided"])
    assert bwd.flops == 2 * fwd.flops


def test_transposed_conv_is_the_forward_pass_with_roles_swapped():
    c = op_cost(*CONV["transposed"])
    assert c.flops == 2 * 2 * 8 * 16 * 16 * 4 * 9          # every input element meets 4 x 9 weights
    assert c.bytes == 4 * (2 * 8 * 256 + 8 * 4 * 9 + 4 + 2 * 4 * 32 * 32)   # output 32x32
    assert op_cost(*CONV["transposed_backward"]).flops == 2 * c.flops


def test_dilated_depthwise_conv1d():
    c = op_cost(*CONV["conv1d_dilated_depthwise"])
    assert c.flops == 2 * 2 * 8 * 16 * 1 * 5                 # out length 16: 16 + 8 - 2*4 - 1 + 1


def test_torch19_conv_without_strides_assumes_a_same_size_output():
    c = op_cost(*CONV_TORCH19["cudnn_convolution"])
    assert c.flops == 2 * 32 * 64 * 56 * 56 * 64 * 9
    assert c.intensity > 100          # far right of a V100's fp32 ridge (17 FLOP/byte)


def test_torch19_conv_backwards():
    assert op_cost(*CONV_TORCH19["backward_input"]).flops == 2 * 32 * 2048 * 49 * 512
    assert op_cost(*CONV_TORCH19["backward"]).flops == 2 * 2 * 32 * 2048 * 49 * 512
    # records neither the weight nor its size: costed through its caller (tracetriage.analyzers.analyses.roofline)
    assert op_cost(*CONV_TORCH19["backward_weight"]) is None


def test_inductor_triton_kernel_is_one_pass_over_each_tensor_argument():
    # The CPU op torch.compile launches a generated kernel from, as HTA's triton example records it,
    # and the fused chain of the issue: two 64M-element fp32 tensors and xnumel.
    c = op_cost("triton_poi_fused_add_cos_sin_0", [[10, 10], [10, 10], [10, 10], []],
                ["float", "float", "float", "Scalar"], ["", "", "", "100"])
    assert (c.flops, c.bytes, c.kind) == (0.0, 3 * 100 * 4, "triton_pass")
    c = op_cost("triton_poi_fused_mul_sin_0", [[67108864], [67108864], []], ["float", "float", "Scalar"])
    assert c.bytes == 2 * 67108864 * 4
    # an Inductor template (a GEMM) does arithmetic its arguments do not show
    assert op_cost("triton_tem_fused_mm_0", [[64, 64], [64, 64], [64, 64]], ["float"] * 3) is None
