"""model/groups: np.unique's answers for integer columns, found by sorting."""
import numpy as np

from tracetriage.analyzers.model.groups import distinct, pair_groups


def test_distinct_is_np_unique_for_integer_arrays_of_every_shape_and_size():
    rng = np.random.default_rng(7)
    cases = [np.zeros(0, np.int64), np.array([5], np.int32), np.array([3, 3, 3]), rng.integers(-5, 5, 1000),
             rng.integers(-2**62, 2**62, 5000), rng.integers(0, 4, (30, 7)).astype(np.int8)]
    for a in cases:
        got, want = distinct(a), np.unique(a)
        assert got.dtype == want.dtype and got.tolist() == want.tolist()


def test_pair_groups_are_np_uniques_columns_and_inverse():
    rng = np.random.default_rng(3)
    for n in (0, 1, 500):
        a, b = rng.integers(-1, 3, n), rng.integers(0, 40, n)
        ua, ub, inv = pair_groups(a, b)
        want, want_inv = np.unique(np.stack([a, b]), axis=1, return_inverse=True)
        assert ua.tolist() == want[0].tolist() and ub.tolist() == want[1].tolist()
        assert inv.tolist() == want_inv.ravel().tolist()


def test_table_answers_are_np_uniques_for_narrow_and_wide_spans():
    """distinct, dense_codes, first_codes and pair_codes tabulate a narrow span and sort a wide one: both are
    np.unique's answers, in its dtypes (narrow signed types included, whose offsets would wrap)."""
    from tracetriage.analyzers.model.groups import dense_codes, first_codes, pair_codes

    rng = np.random.default_rng(11)
    for dtype in (np.int8, np.int16, np.int32, np.int64, np.uint16):
        for n in (0, 1, 300, 4000):
            for hi in (3, 120, 10**6, 2**40):
                lo = 0 if np.dtype(dtype).kind == "u" else -5
                top = min(hi, int(np.iinfo(dtype).max))
                v = rng.integers(lo, top, n).astype(dtype)
                want, want_first, want_inv = np.unique(v, return_index=True, return_inverse=True)
                got = distinct(v)
                assert got.dtype == want.dtype and got.tolist() == want.tolist()
                u, inv = dense_codes(v)
                assert u.dtype == want.dtype and u.tolist() == want.tolist() and inv.tolist() == want_inv.tolist()
                first, inv = first_codes(v)
                assert first.tolist() == want_first.tolist() and inv.tolist() == want_inv.tolist()
    for n in (0, 1, 2000):
        a, b = rng.integers(0, 60, n).astype(np.int32), rng.integers(-1, 300, n).astype(np.int32)
        ua, ub, inv = pair_codes(a, b)
        want, want_inv = np.unique(a.astype(np.int64) * (1 << 32) + b, return_inverse=True)
        assert (ua.astype(np.int64) * (1 << 32) + ub).tolist() == want.tolist()
        assert inv.tolist() == want_inv.tolist()


def test_stable_order_is_a_stable_argsort_of_small_and_large_codes():
    from tracetriage.analyzers.model.groups import stable_order

    rng = np.random.default_rng(5)
    for codes in (np.zeros(0, np.int64), rng.integers(0, 300, 5000), rng.integers(0, 70000, 5000),
                  rng.integers(-3, 3, 100)):
        assert stable_order(codes).tolist() == np.argsort(codes, kind="stable").tolist()
