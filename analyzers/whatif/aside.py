"""The report's what-if levers replayed in a forked child while the parent runs the other analyses.

    early = aside.start(trace)            # None where a fork would not pay: a small trace, one core, not Linux
    ...                                   # idle, ranges, roofline, steps, health ... in the parent
    levers = early.levers() if early is not None else None   # None: the child failed; replay here instead
    early.discard()                       # (always, in a finally: a child whose levers are not asked for is ended)

On a large trace the levers (the dependency graph, every lever's edit and replay, the best ones again without the
profiler) take about as long as all the other analyses together, and neither reads the other, so on two cores the
replays cost no wall time of their own. The child shares the trace copy-on-write and sends back its Levers without
the graph (pickled: ~1 MB for a 300 MB trace; the graph and its context hold the trace), and
Levers.unprofiled_ratio builds the graph again should the parent need one more lever's ratio. A child that fails
for any reason sends nothing and the parent replays itself: the same figures either way.
"""
from __future__ import annotations

import gc
import os
import pickle
import signal
import sys
import threading

from tracetriage.analyzers.model.trace import Trace
from tracetriage.analyzers.whatif.predict import Levers

MIN_EVENTS = 100_000   # below this the levers take a few tens of ms: a fork and a pickle would cost a share of it


class Early:
    """One child replaying the levers; its result read once, or the child ended unread."""

    def __init__(self, pid: int, fd: int):
        self.pid, self.fd = pid, fd

    def levers(self) -> tuple[bool, Levers | None]:
        """(True, what the child's replay gave: Levers or None, as the report's own call would) or (False, None)
        when the child failed."""
        try:
            with os.fdopen(self.fd, "rb") as r:
                payload = r.read()
        finally:
            self.fd = -1
            status = self._reap()
        if status != 0 or not payload:
            return False, None
        try:
            return True, pickle.loads(payload)
        except Exception:
            return False, None

    def discard(self) -> None:
        """End a child whose levers were not asked for (no GPU timeline, withheld, an error in the parent)."""
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
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            return -1
        return status


def start(trace: Trace, replay) -> Early | None:
    """`replay(trace)` (the report's own call: Levers or None) in a forked child, where that pays."""
    if len(trace.ev) < MIN_EVENTS or not sys.platform.startswith("linux") or (os.cpu_count() or 1) < 2 \
            or threading.current_thread() is not threading.main_thread():
        return None
    rfd, wfd = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(rfd)
        os.close(wfd)
        return None
    if pid == 0:  # child: replay, send the levers back, exit without cleanup (the parent's buffers are its own)
        code = 1
        payload = b""
        try:
            os.close(rfd)
            gc.disable()   # a collection would touch every object the parent shares with this process
            lv = replay(trace)
            shipped = lv.without_graph(trace) if lv is not None else None
            payload = pickle.dumps(shipped, protocol=pickle.HIGHEST_PROTOCOL)
            code = 0
        except BaseException:
            payload = b""
        try:
            with os.fdopen(wfd, "wb") as w:
                w.write(payload)
        finally:
            os._exit(code)
    os.close(wfd)
    return Early(pid, rfd)
