"""The link step's fallback (tracetriage.analyzers.loading.containment): the innermost op around a host call, found
by binary lifting for many calls of a thread and by a search back over the ops for a few: the same op either way."""
import numpy as np
import pytest

from tracetriage.analyzers.loading import containment
from tracetriage.analyzers.model.trace import NONE


def _brute_force(op_s, op_e, qs, qe, rows):
    out = []
    for s, e in zip(qs.tolist(), qe.tolist()):
        j = np.flatnonzero((op_s <= s) & (op_e >= e))
        out.append(rows[j[-1]] if len(j) else NONE)
    return np.array(out, np.int64)


@pytest.mark.parametrize("n_ops", [1, 7, 300, 5000])
def test_a_few_calls_looked_for_back_find_the_op_binary_lifting_finds(monkeypatch, n_ops):
    """Ops that need not nest (a merged trace's overlap), calls inside none of them, calls far past the last op."""
    rng = np.random.default_rng(n_ops)
    op_s = np.sort(rng.integers(0, 100_000, n_ops))
    op_e = op_s + rng.integers(0, 3000, n_ops) * (rng.random(n_ops) < 0.9) + rng.integers(0, 200_000, n_ops) * \
        (rng.random(n_ops) < 0.02)          # a few ops long enough that the answer lies thousands of ops back
    rows = rng.permutation(10 * n_ops)[:n_ops]
    qs = rng.integers(-10, 120_000, containment.FEW_QUERIES)
    qs[0] = op_s[0] - 1                    # before every op: none holds it
    qe = qs + rng.integers(0, 500, len(qs))
    qs[1], qe[1] = op_s[-1], op_e[-1]      # the last op's own span: it holds it
    want = _brute_force(op_s, op_e, qs, qe, rows)
    back = containment._innermost(op_s, op_e, qs, qe, rows)                   # a few: the search back
    monkeypatch.setattr(containment, "FEW_QUERIES", -1)
    lifted = containment._innermost(op_s, op_e, qs, qe, rows)                 # the table, whatever the count
    assert back.tolist() == lifted.tolist() == want.tolist()
    assert want[0] == NONE and (want != NONE).any()
