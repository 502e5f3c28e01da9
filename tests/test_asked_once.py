"""What the report asks of one trace from several places is found once (model.last_trace, Trace.devices, the
levers' Context.call_keys), and a name test that passes no name (or every name) answers without a pass over the rows
(model.names): the same answers as asking afresh, on small synthetic traces."""
from __future__ import annotations

import numpy as np

from test_steps import training_loop
from tracetriage.analyzers.analyses import idle, steps
from tracetriage.analyzers.analyses.setup import setup_step_bounds
from tracetriage.analyzers.model.last_trace import last_trace
from tracetriage.analyzers.model.names import NameIndex, name_flags
from tracetriage.analyzers.model.trace import thread_key
from tracetriage.analyzers.whatif import depgraph
from tracetriage.analyzers.whatif.levers.spec import Context


def test_a_function_of_the_last_trace_is_computed_once_for_it_and_afresh_for_another_trace(tmp_path):
    calls = []

    @last_trace
    def count_events(trace):
        calls.append(trace)
        return len(trace.ev)

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = training_loop(tmp_path / "a", steps_n=12), training_loop(tmp_path / "b", steps_n=8)
    assert count_events(a) == count_events(a) == len(a.ev)
    assert count_events(b) == len(b.ev) != len(a.ev)   # another trace: asked afresh, not the last answer
    assert count_events(a) == len(a.ev)
    assert [t is a for t in calls] == [True, False, True]


def test_the_steps_searched_once_are_the_steps_searched_afresh(tmp_path):
    tr = training_loop(tmp_path)
    steps.search(tr)    # (the report searches before its levers' fork; find and the warm_up lever take that answer)
    found = steps.find(tr, idle.analyze(tr))
    fresh = steps.search.__wrapped__(tr)
    again = steps._build(tr, idle.analyze(tr), *fresh[0], **fresh[1])
    assert [(s.start_ns, s.end_ns, s.setup) for s in found.steps] == [(s.start_ns, s.end_ns, s.setup)
                                                                       for s in again.steps]
    assert len(found.steps) == 12
    bounds, kept = setup_step_bounds(tr)
    assert kept == len(found.setup_steps)


def test_a_name_test_that_passes_no_name_or_every_name_gives_the_rows_flags_as_a_table_would(tmp_path):
    tr = training_loop(tmp_path)
    rows = np.flatnonzero(tr.ev.cat >= 0)
    index = NameIndex(tr, rows)
    for test in (lambda n: False, lambda n: True, lambda n: n.startswith("aten::"), lambda n: n == "no such op"):
        table = np.array([bool(test(tr.names[i])) for i in tr.ev.name[rows]], bool)
        got = index.flags(test)
        assert got.dtype == bool and np.array_equal(got, table)
        assert np.array_equal(name_flags(tr, rows, test), table)
    assert name_flags(tr, rows[:0], lambda n: True).shape == (0,)


def test_a_traces_devices_are_found_once_and_each_caller_gets_its_own_list(tmp_path):
    tr = training_loop(tmp_path)
    first = tr.devices
    first.append(99)       # a caller's list is its own: the next caller's is the trace's devices
    assert tr.devices == [0] and tr.devices is not tr.devices


def test_the_levers_call_keys_are_each_calls_thread_key(tmp_path):
    tr = training_loop(tmp_path)
    c = Context(tr, depgraph.build(tr))
    ev = tr.ev
    assert np.array_equal(c.call_keys, thread_key(ev.pid[c.g.c_row], ev.tid[c.g.c_row]))
    assert c.call_keys is c.call_keys
