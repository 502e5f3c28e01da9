"""A forked child's result comes back whole through the pipe (numpy columns out of band, beyond the pipe's
size, object arrays and plain values in the pickle); a child that fails says so, and one not asked is ended."""
import os
import time

import numpy as np
import pytest

from tracetriage.analyzers.loading import forked

pytestmark = pytest.mark.skipif(not forked.can_fork(), reason="forks on Linux with two cores or more")


def test_columns_beyond_the_pipes_size_come_back_equal_and_writable():
    cols = {"ts": np.linspace(0, 1, 700_000), "name": np.arange(700_000, dtype=np.int32) % 97,
            "cat_names": np.array(["kernel", "cpu_op", None], dtype=object), "every_other": np.arange(10)[::2]}
    child = forked.start(lambda: [cols, "tail", 3])
    assert child is not None
    done, (got, tail, three) = child.result()
    assert done and tail == "tail" and three == 3 and got.keys() == cols.keys()
    for k, v in cols.items():
        assert got[k].dtype == v.dtype and np.array_equal(got[k], v)
    got["ts"][0] = 5.0                    # the parent's own copy
    assert cols["ts"][0] == 0.0


def test_a_child_that_raises_gives_no_result():
    child = forked.start(lambda: 1 / 0)
    assert child is not None and child.result() == (False, None)
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, os.WNOHANG)     # reaped


def test_a_child_not_asked_is_ended_at_once():
    child = forked.start(lambda: time.sleep(60))
    assert child is not None
    t0 = time.monotonic()
    child.discard()
    assert time.monotonic() - t0 < 5
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, os.WNOHANG)
