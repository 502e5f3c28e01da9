"""A call site is never read off a built-in frame the profiler named after another call
(tracetriage.analyzers.analyses.frame_labels).

heldout-user19 gp_cudagraph: `.pow()` runs once, then `.copy_()` 222 times; the Python tracer names each copy_
frame `<built-in method pow of Tensor object at 0x...>` (the first call's name, kept by the callable's address),
and the report said 'aten::copy_ 7% (222 calls; from the `.pow()` in `do_work` (cudagraph_mwe.py:6))'.
"""
from __future__ import annotations

import kineto_factory as kf
from test_steps import US, Timeline
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.voice.report import five_lines

POW = "<built-in method pow of Tensor object at 0x7fd93fc44cc0>"


def _frame(tl: Timeline, name: str, start: int, end: int, pid: int):
    tl.extra.append({"ph": "X", "cat": "python_function", "name": name, "pid": kf.PID, "tid": kf.TID,
                     "ts": round((kf.ORIGIN_NS + start) / 1000, 3), "dur": round((end - start) / 1000, 3),
                     "args": {"Python id": pid, "Python parent id": 1}})


def _script(tl: Timeline, copy_frame: str):
    """do_work: one `.pow()`, then 40 `.copy_()` calls, each built-in frame around its op."""
    begin = tl.t
    ids = iter(range(2, 100))
    for name, frame, n, kernel_ns in (("aten::pow", POW, 1, 300 * US),
                                      ("aten::copy_", copy_frame, 40, 60 * US)):
        for _ in range(n):
            _frame(tl, frame, tl.t, tl.t + 9 * US, next(ids))
            tl.op(name, kernel_ns)
    _frame(tl, "cudagraph_mwe.py(6): do_work", begin - 5 * US, tl.t + 5 * US, 1)


def test_copies_under_frames_named_after_an_earlier_pow_are_not_said_to_come_from_pow(tmp_path):
    tl = Timeline()
    _script(tl, copy_frame=POW)
    time = five_lines(analyze_trace(tl.write(tmp_path / "reused.json")))[1]
    copy_words = time.split("aten::copy_", 1)[1].split("),", 1)[0]
    assert "from `do_work` (cudagraph_mwe.py:6)" in copy_words and ".pow()" not in copy_words, time
    # the one frame that did run pow keeps its call
    assert "from the `.pow()` in `do_work`" in time.split("aten::pow", 1)[1], time


def test_copies_under_their_own_copy_frames_keep_the_call(tmp_path):
    tl = Timeline()
    _script(tl, copy_frame="<built-in method copy_ of Tensor object at 0x7fd93fc44d10>")
    time = five_lines(analyze_trace(tl.write(tmp_path / "own.json")))[1]
    assert "from the `.copy_()` in `do_work`" in time.split("aten::copy_", 1)[1], time
