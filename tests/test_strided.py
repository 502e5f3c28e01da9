"""The bytes a transposed read really moves (analyses.strided): which operand a kernel reads against its layout, and
the 32-byte sectors it asks for."""
from __future__ import annotations

from tracetriage.analyzers.analyses.strided import SECTOR, fastest_dim, operand_reads

N = 8192


def test_in_x_t_plus_y_it_is_y_that_is_read_against_its_layout():
    # TensorIterator gives the output the first full-size input's layout: x.t() is column-major, so the walk goes
    # down columns, and y, row-major, is the one read a row apart per element
    reads = operand_reads([[N, N], [N, N], []], [[1, N], [N, 1], []], ["float", "float", "Scalar"], "elementwise")
    x, y = reads
    assert (x.inner_stride, y.inner_stride) == (1, N)
    assert not x.strided and y.strided
    assert y.useful_bytes == N * N * 4 and y.sector_bytes == N * N * SECTOR and y.amplification == 8.0


def test_a_bf16_operand_read_strided_asks_for_sixteen_times_its_bytes():
    _, y = operand_reads([[N, N], [N, N]], [[1, N], [N, 1]], ["c10::BFloat16", "c10::BFloat16"], "elementwise")
    assert y.amplification == 16.0


def test_copy_walks_its_destination_so_a_transposed_source_is_the_strided_read():
    dst, src = operand_reads([[N, N], [N, N], []], [[N, 1], [1, N], []], ["float", "float", "Scalar"], "copy")
    assert not dst.strided and src.strided and src.sector_bytes == N * N * SECTOR


def test_a_matmul_reads_a_transposed_operand_as_a_flag():
    reads = operand_reads([[N, N], [N, N]], [[N, 1], [1, N]], ["c10::BFloat16", "c10::BFloat16"], "matmul")
    assert not any(r.strided for r in reads)


def test_a_broadcast_operand_is_not_strided_and_a_small_stride_costs_only_what_it_spans():
    x, row = operand_reads([[64, 64], [1, 64]], [[64, 1], [64, 1]], ["float", "float"], "elementwise")
    assert not row.strided
    # every other element (x[:, ::2]): a warp's 32 reads span 64 elements, 8 sectors for 4 useful: 2x its bytes
    _, half = operand_reads([[64, 64], [64, 64]], [[64, 1], [128, 2]], ["float", "float"], "elementwise")
    assert half.inner_stride == 2 and half.amplification == 2.0


def test_the_fastest_dimension_skips_dimensions_of_one_and_broadcasts():
    assert fastest_dim((1, 64), (64, 1)) == 1
    assert fastest_dim((64, 1), (1, 64)) == 0
    assert fastest_dim((8, 64), (0, 1)) == 1
    assert fastest_dim((1,), (1,)) is None
