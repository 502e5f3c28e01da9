"""Lookups the report makes once and shares: every row's thread key, the trace's name codes, the top-level ops.

Each is a faster way to the same answer (the report's text and JSON stay byte for byte what they were); these tests
hold the answers to the ways they replace, on traces where the shortcut could go wrong: rows of several threads,
ops that start at the same nanosecond on two threads, an answer a caller modifies.
"""
import ast
from pathlib import Path

import numpy as np

from kineto_factory import annotation, document, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.trace import thread_key

ROOT = Path(__file__).resolve().parents[1]


def _two_threads(tmp_path):
    """Ops on two threads, some starting at the same ns on both (a tie the levers' op order must break by thread),
    nested ops, and ranges."""
    ev = []
    for i in range(40):
        t = i * 10_000
        for tid in (7, 3):
            ev.append(op("aten::linear" if i % 3 else "aten::add", t, t + 8_000, tid=tid))
            ev.append(op("aten::mm", t + 1_000, t + 5_000, tid=tid))      # nested: not top-level
        ev.append(annotation("step", t, t + 9_000))
    return load(write(tmp_path / "two_threads.json", document(ev)), use_cache=False)


def test_thread_keys_answer_as_thread_key_and_hand_out_copies(tmp_path):
    from tracetriage.analyzers.model.trace import thread_keys

    tr = _two_threads(tmp_path)
    ev = tr.ev
    rows = np.flatnonzero(ev.tid == 3)
    mask = ev.tid == 7
    for ix in (rows, mask, np.arange(len(ev)), np.zeros(0, np.int64)):
        assert thread_keys(ev, ix).tolist() == thread_key(ev.pid[ix], ev.tid[ix]).tolist()
    assert int(thread_keys(ev, int(rows[0]))) == int(thread_key(ev.pid[rows[0]], ev.tid[rows[0]]))
    got = thread_keys(ev, rows)
    got[:] = -1                                     # a caller that writes into its answer ...
    assert (thread_keys(ev, rows) == thread_key(ev.pid[rows], ev.tid[rows])).all()   # ... changes no later one
    other = _two_threads(tmp_path).ev.take(np.flatnonzero(ev.tid == 7))
    assert thread_keys(other, np.arange(len(other))).tolist() == thread_key(other.pid, other.tid).tolist()


def test_name_codes_are_np_uniques_of_the_rows_names(tmp_path):
    from tracetriage.analyzers.model.names import name_codes

    tr = _two_threads(tmp_path)
    for rows in (np.flatnonzero(tr.ev.tid == 3), np.arange(len(tr.ev)), np.zeros(0, np.int64)):
        ids, inv = name_codes(tr, rows)
        want, want_inv = np.unique(tr.ev.name[rows], return_inverse=True)
        assert ids.dtype == want.dtype and ids.tolist() == want.tolist() and inv.tolist() == want_inv.tolist()


def test_the_levers_top_level_ops_are_outermost_ones_in_its_order_ties_included(tmp_path):
    """outermost_ops (shared with the set-up windows) is outermost() of every cpu_op, order and all: ops starting
    at the same ns on two threads come by thread key, then row."""
    from tracetriage.analyzers.whatif import depgraph as dg
    from tracetriage.analyzers.whatif.levers import knob
    from tracetriage.analyzers.whatif.levers.spec import Context

    paths = [write(tmp_path / "two_threads.json", document(_two_threads_events())),
             ROOT / "traces" / "smell-sync-nonzero.json.gz"]
    for path in paths:
        tr = load(path, use_cache=False)
        c = Context(tr, dg.build(tr))
        want = knob.outermost(c, knob.ops_named(c, lambda n: True))
        assert knob.outermost_ops(c).tolist() == want.tolist()
    starts = tr.ev.start[want]
    assert len(want) and (starts[1:] >= starts[:-1]).all()


def _two_threads_events():
    from kineto_factory import call, gpu

    ev = []
    for i in range(40):
        t = i * 10_000
        for tid in (7, 3):
            corr = 2 * i + (tid == 3) + 1
            ev.append(op("aten::add", t, t + 8_000, ext=corr, tid=tid))
            ev.append(call("cudaLaunchKernel", t + 1_000, t + 3_000, corr, ext=corr, tid=tid))
            ev.append(gpu("void k<float>(float*)", t + 4_000 + (tid == 3) * 2_500, t + 6_000 + (tid == 3) * 2_500,
                          corr))
    return ev


def test_the_engine_asks_numpy_for_no_hashed_unique_nor_two_gathers_per_thread_key():
    """np.unique(x) of one array hashes every value (numpy 2), several times slower than groups.distinct on the
    engine's integer columns; thread_key(ev.pid[r], ev.tid[r]) gathers two columns where thread_keys gathers one
    it made once. Neither comes back (a 942k-event report paid ~0.1 CPU-s for them)."""
    found = []
    for f in sorted((ROOT / "analyzers").rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if not isinstance(node, ast.Call):
                continue
            fn = node.func
            hashed = (isinstance(fn, ast.Attribute) and fn.attr == "unique" and isinstance(fn.value, ast.Name)
                      and fn.value.id == "np" and len(node.args) == 1 and not node.keywords)
            gathers = (isinstance(fn, ast.Name) and fn.id == "thread_key" and node.args
                       and isinstance(node.args[0], ast.Subscript) and isinstance(node.args[0].value, ast.Attribute)
                       and node.args[0].value.attr == "pid")
            if hashed or gathers:
                found.append(f"{f.relative_to(ROOT)}:{node.lineno}")
    assert not found, found
