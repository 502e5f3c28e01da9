"""Work done in a forked child while the parent does its own, and its result sent back through a pipe.

    child = forked.start(lambda: decode_pieces(...))    # None where there is no fork (not Linux, one core)
    mine = decode_pieces(...)                            # the parent's own share, meanwhile
    done, theirs = child.result()                        # (False, None): the child failed; do its share here
    child.discard()                                      # (in a finally: a child whose result is not asked for ends)

The child shares the parent's memory copy-on-write, runs `work()` with the cyclic GC off (a collection would
touch, and so copy, every object it shares), sends the result and exits without cleanup (the parent's buffers
are not its to flush). The result goes as pickle protocol 5 with its numpy buffers out of band: the arrays'
bytes are written from where they lie and read straight into the buffers the parent's arrays then wrap, with
no pickled copy on either side (for 35 MB of columns: half the time of pickle.dumps, a write and pickle.loads,
and a quarter of the child's CPU), through a pipe widened to 1 MB. Used by the decoder (half the pieces) and the
report (the what-if levers).
"""
from __future__ import annotations

import atexit
import fcntl
import gc
import os
import pickle
import signal
import struct
import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any

PIPE_BYTES = 1 << 20           # Linux's default ceiling for an unprivileged process (/proc/sys/fs/pipe-max-size)
_F_SETPIPE_SZ = 1031           # (fcntl.F_SETPIPE_SZ from Python 3.10 on)
_LENGTH = struct.Struct("<Q")


class Child:
    """One forked child's work: its result read once, or the child ended unread."""

    def __init__(self, pid: int, fd: int, handoff: tuple[int, int] | None = None):
        self.pid, self.fd = pid, fd
        self._handoff = handoff       # (memfd, the write end of the signal's pipe): what start(handoff=True) made

    def hand(self, value: Any) -> None:
        """Hand the child `value`, found here after the fork (a no-op for a child started without a handoff): its
        pickle goes into the memfd both processes share, then one byte through the pipe says it is there. Nothing
        here waits for the child, busy with its own work meanwhile (a pipe would take 1 MB of a 13 MB roofline and
        block this process until the child read it)."""
        if self._handoff is None:
            return
        mfd, wfd = self._handoff
        self._handoff = None
        try:
            _send(mfd, value)
            os.write(wfd, b"!")
        except Exception:   # (a full memory, a value that does not pickle: the child reads an end of file and
            pass            # fails, and the caller does its work itself)
        finally:
            os.close(mfd)
            os.close(wfd)

    def result(self) -> tuple[bool, Any]:
        """(True, what work() returned), or (False, None) when the child failed (it raised, was killed, or sent
        something unreadable).

        A result that came whole is the child's last act (it sends only once its work is done, then exits): its
        exit, the kernel freeing its memory (10-50 ms for the decoder's, on 2 loaded cores), is not waited for
        here but reaped at the next fork or result, without waiting."""
        value, ok = None, False
        try:
            with os.fdopen(self.fd, "rb", buffering=0) as r:
                value, ok = _receive(r), True
        except Exception:
            pass
        finally:
            self.fd = -1
        if ok:
            _exiting.append(self.pid)
            _reap_exited()
            return True, value
        self._reap()
        return False, None

    def discard(self) -> None:
        """End a child whose result will not be asked for (a no-op once it was read)."""
        if self._handoff is not None:
            for fd in self._handoff:
                os.close(fd)
            self._handoff = None
        if self.fd < 0:
            return
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        os.close(self.fd)
        self.fd = -1
        self._reap()

    def _reap(self) -> int:
        try:
            return os.waitpid(self.pid, 0)[1]
        except ChildProcessError:
            return -1


_exiting: list[int] = []      # children whose whole result was read, not yet reaped


@atexit.register
def _reap_all() -> None:
    """Wait for every child not reaped yet before the process ends (they exited long before: no wait), so that
    their CPU counts in what the process's parent measures (resource.RUSAGE_CHILDREN counts reaped children only)."""
    for pid in _exiting:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    _exiting.clear()


def _reap_exited() -> None:
    """Reap the children of _exiting that have exited (none is waited for)."""
    for pid in list(_exiting):
        try:
            gone = os.waitpid(pid, os.WNOHANG)[0] == pid
        except ChildProcessError:
            gone = True
        if gone:
            _exiting.remove(pid)


_beside: list[threading.Thread] = []     # work on memory that is handed back (beside()), finished before a fork


def beside(work: Callable[[], Any], name: str) -> None:
    """work() in a thread of its own, finished before the next fork (start()): the load hands a decoded text's pages
    back to the system there, without the GIL, while it goes on; a child forked while that ran would keep the pages,
    copy-on-write, until it exits."""
    _beside[:] = [t for t in _beside if t.is_alive()]
    thread = threading.Thread(target=work, name=name, daemon=True)
    _beside.append(thread)
    thread.start()


def _finish_beside() -> None:
    while _beside:
        _beside.pop().join()


def can_fork() -> bool:
    return sys.platform.startswith("linux") and (os.cpu_count() or 1) > 1


def start(work: Callable[..., Any], handoff: bool = False) -> Child | None:
    """work() in a forked child; None where a fork is not to be had (not Linux, one core, fork failed).

    handoff: work(receive) instead, where receive() waits for the value the parent gives Child.hand after the fork
    (and raises where the parent gave none): the child begins its work while the parent still finds what it needs
    later (the report's levers build their dependency graph while the parent finds the roofline they read)."""
    if not can_fork():
        return None
    _reap_exited()
    _finish_beside()
    _return_free_memory()
    try:
        channel = _handoff_channel() if handoff else None
    except OSError:   # (no memfd: a kernel before 3.17)
        return None
    rfd, wfd = os.pipe()
    try:
        with warnings.catch_warnings():
            # Python 3.12+ warns of a fork beside a running thread: a caller's own (a notebook's, the dashboard's),
            # which holds nothing the child uses (the read-ahead's thread has ended before a decode forks)
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:
        for fd in (rfd, wfd, *(channel or ())):
            os.close(fd)
        return None
    if pid == 0:  # the child: work, send, exit at once
        code = 1
        try:
            os.close(rfd)
            gc.disable()
            if channel is None:
                value = work()
            else:
                mfd, signal_r, signal_w = channel
                os.close(signal_w)   # (so that a parent gone without handing leaves an end of file, not a wait)
                value = work(lambda: _handed(mfd, signal_r))
            _widen(wfd)
            _send(wfd, value)
            code = 0
        except BaseException:
            pass
        finally:
            os._exit(code)
    os.close(wfd)
    if channel is None:
        return Child(pid, rfd)
    os.close(channel[1])
    return Child(pid, rfd, (channel[0], channel[2]))


def _handoff_channel() -> tuple[int, int, int]:
    """(a memfd, the read and write ends of a pipe): the value Child.hand writes, and the byte that says it did."""
    mfd = os.memfd_create("tracetriage-handoff", os.MFD_CLOEXEC)
    r, w = os.pipe()
    return mfd, r, w


def _handed(mfd: int, signal_r: int) -> Any:
    """In the child: wait for the parent's byte, then read the value it wrote into the memfd (from its start: the
    parent is done with the file offset both share)."""
    if os.read(signal_r, 1) != b"!":
        raise EOFError("the parent handed nothing")
    os.lseek(mfd, 0, os.SEEK_SET)
    with os.fdopen(mfd, "rb", buffering=0) as r:
        return _receive(r)


def _return_free_memory() -> None:
    """Give the heap's free pages back to the system before a fork (glibc's malloc_trim; elsewhere nothing).

    After a fork both processes share every page copy-on-write, free ones too: the memory a large trace's decoding
    freed (its structs, its text) would hold the child's new objects and arrays, and each first write to one of
    its pages would copy the parent's. Given back, they come as fresh zero pages instead (cheaper), and the parent's
    own writes to them copy nothing either. For the report's levers on a 300 MB trace: the child's page faults
    34k -> 23k and its CPU 0.80 -> 0.77 s, for ~9 ms of trimming (2 loaded cores)."""
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):   # (no glibc: musl has no malloc_trim)
        pass


def _widen(fd: int) -> None:
    try:
        fcntl.fcntl(fd, _F_SETPIPE_SZ, PIPE_BYTES)
    except OSError:
        pass  # (a lower ceiling set by the administrator: the default 64 KB works, in more steps)


def _send(fd: int, value: Any) -> None:
    """The value's pickle (its buffers out of band), then each buffer's bytes as they lie in memory."""
    buffers: list[pickle.PickleBuffer] = []
    head = pickle.dumps(value, protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    sizes = pickle.dumps([len(head)] + [r.nbytes for r in raws])
    _write_all(fd, _LENGTH.pack(len(sizes)) + sizes + head)
    for r in raws:
        _write_all(fd, r)


def _receive(r) -> Any:
    (n,) = _LENGTH.unpack(_read_exactly(r, _LENGTH.size))
    head_size, *sizes = pickle.loads(_read_exactly(r, n))
    head = _read_exactly(r, head_size)
    return pickle.loads(head, buffers=[_read_exactly(r, k) for k in sizes])


def _write_all(fd: int, data) -> None:
    view = memoryview(data).cast("B")
    while len(view):
        view = view[os.write(fd, view):]


def _read_exactly(r, n: int) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = r.readinto(view[got:])
        if not k:
            raise EOFError(f"the child's result ended after {got:,} of {n:,} bytes")
        got += k
    return buf
