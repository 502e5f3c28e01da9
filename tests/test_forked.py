"""A forked child's result comes back whole through the pipe (numpy columns out of band, beyond the pipe's
size, object arrays and plain values in the pickle); a child that fails says so, and one not asked is ended. A value
the parent finds after the fork reaches the child whole (handoff), without the parent waiting for the child."""
import os
import signal
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


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "reaped"    # (it had exited by the time its result was read, and was reaped then)


def test_a_child_whose_whole_result_came_is_not_waited_for_and_is_reaped_at_the_next_fork():
    child = forked.start(lambda: 7)
    assert child is not None and child.result() == (True, 7)
    deadline = time.monotonic() + 30
    while _state(child.pid) not in ("Z", "reaped"):   # exited, not yet reaped: a zombie until the next fork
        assert time.monotonic() < deadline
        time.sleep(0.01)
    after = forked.start(lambda: 0)
    assert after is not None and after.result() == (True, 0)
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, os.WNOHANG)         # reaped by that fork


def test_children_not_reaped_yet_are_waited_for_at_exit_so_their_cpu_counts_for_the_caller():
    """The benchmark reads a command's CPU from resource.RUSAGE_CHILDREN, which counts reaped children only."""
    import subprocess
    import sys
    code = ("from tracetriage.analyzers.loading import forked\n"
            "import time\n"
            "def spin():\n"
            "    t = time.process_time()\n"
            "    while time.process_time() - t < 0.5: pass\n"
            "    return 1\n"
            "assert forked.start(spin).result() == (True, 1)\n"
            "import os, sys; sys.stdout.flush(); import atexit; atexit._run_exitfuncs(); os._exit(0)\n")
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) >= 0.45   # the grandchild's 0.5 s


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_memory_freed_before_a_fork_goes_back_to_the_system_so_the_child_does_not_copy_it():
    import ctypes

    libc = ctypes.CDLL(None)
    m_trim_threshold = -1
    # malloc keeps what is freed (as it keeps a decoded trace's structs, freed inside its heap), not only when what
    # is freed lies inside the heap: 48 MB in 64 KB blocks, freed
    libc.mallopt(m_trim_threshold, 1 << 30)
    try:
        blocks = [bytearray(64 << 10) for _ in range(768)]
        del blocks
        held = _resident_bytes()
        child = forked.start(lambda: 3)
        assert child is not None and child.result() == (True, 3)
        assert _resident_bytes() < held - (32 << 20)
    finally:
        libc.mallopt(m_trim_threshold, 128 << 10)     # (glibc's default)


def test_a_value_handed_after_the_fork_reaches_the_child_whole_and_writable():
    # the report's levers: the child builds its graph while the parent finds the roofline (13 MB at x5) it hands over
    cols = {"bytes": np.linspace(0, 1, 700_000), "bound": np.arange(700_000, dtype=np.int8), "peaks": None}

    def work(receive):
        got = receive()
        got["bytes"][0] = 7.0            # (the child's own copy: its arrays are writable)
        return got

    child = forked.start(work, handoff=True)
    assert child is not None
    child.hand(cols)
    done, got = child.result()
    assert done and got.keys() == cols.keys() and got["peaks"] is None and got["bound"].dtype == np.int8
    assert got["bytes"][0] == 7.0 and np.array_equal(got["bytes"][1:], cols["bytes"][1:])
    assert np.array_equal(got["bound"], cols["bound"]) and cols["bytes"][0] == 0.0


def test_handing_a_value_larger_than_a_pipe_does_not_wait_for_a_busy_child():
    # the child reads what it was handed only after the parent's hand() has returned: a hand that waited for the
    # child (a pipe of 64 KB-1 MB filled by 8 MB) would never return; the alarm fails the test instead of hanging it
    go_r, go_w = os.pipe()

    def work(receive):
        os.read(go_r, 1)
        return float(receive().sum())

    child = forked.start(work, handoff=True)
    assert child is not None
    old = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("hand() waited for the child"))
    signal.alarm(20)
    try:
        child.hand(np.ones(1 << 20))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    os.write(go_w, b"!")
    assert child.result() == (True, float(1 << 20))
    os.close(go_r)
    os.close(go_w)


def test_a_child_whose_parent_lets_go_without_handing_fails_instead_of_waiting():
    # the child holds no write end of the signal's pipe: the parent's close is an end of file there, not a wait
    child = forked.start(lambda receive: receive(), handoff=True)
    assert child is not None
    for fd in child._handoff:
        os.close(fd)
    child._handoff = None
    old = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("the child waited for a hand that never came"))
    signal.alarm(20)
    try:
        assert child.result() == (False, None)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_a_value_that_cannot_be_handed_fails_the_child_not_the_parent():
    child = forked.start(lambda receive: receive(), handoff=True)
    assert child is not None
    child.hand(lambda: None)              # (a lambda does not pickle)
    assert child.result() == (False, None)
