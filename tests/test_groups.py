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
