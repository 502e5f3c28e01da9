"""The levers' per-op codes and name tests, made through the shared lookups (groups.pair_codes, names.name_tests)
where they sorted every op's (name, shape) pair or compared every call's name string.

Each is a faster way to the same answer (the report's text and JSON stay byte for byte what they were): these tests
hold the new ways to np.unique's numbering, which the levers' searches depend on (batch_passes tries the rarest codes
first, in code order), on ops of several names and shapes, ops with no shapes, and calls of no op.
"""
import inspect

import numpy as np

from kineto_factory import call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.trace import CPU_OP
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif.levers.spec import Context


def _mixed(tmp_path):
    """Ops of three names on several shapes (one recording none), each launching a kernel, a few launches outside any
    op, and allocator calls."""
    ev = []
    corr = 0
    for i in range(60):
        t = i * 20_000
        name = ("aten::embedding", "aten::mul", "aten::relu", "aten::add")[i % 4]
        dims = [[4, 2 + i % 3]] if i % 7 else None      # (every seventh records no shapes)
        ev.append(op(name, t, t + 9_000, dims=dims, types=["float"]) if dims else op(name, t, t + 9_000))
        corr += 1
        ev.append(call("cudaLaunchKernel", t + 1_000, t + 3_000, corr))
        ev.append(gpu("void k<float>(float*)", t + 4_000, t + 6_000, corr))
        if i % 5 == 0:      # a launch outside any op
            corr += 1
            ev.append(call("cudaLaunchKernel", t + 10_000, t + 12_000, corr))
            ev.append(gpu("void k2<float>(float*)", t + 13_000, t + 14_000, corr))
        if i % 4 == 0:
            ev.append(call("cudaMalloc" if i % 8 else "cudaFree", t + 15_000, t + 16_000, None))
    return load(write(tmp_path / "mixed.json", document(ev)), use_cache=False)


def test_the_pass_and_item_codes_number_ops_as_np_unique_numbers_their_name_and_shape(tmp_path):
    from tracetriage.analyzers.whatif.levers import batch_items, batch_passes

    tr = _mixed(tmp_path)
    c = Context(tr, dg.build(tr))
    ops = np.flatnonzero(tr.ev.cat == CPU_OP)
    assert len(np.unique(tr.ev.shape[ops])) > 3
    for rows in (ops, ops[::2], ops[:1], ops[:0]):
        pair = tr.ev.name[rows].astype(np.int64) * (len(tr.shapes_raw) + 1) + (tr.ev.shape[rows].astype(np.int64) + 1)
        _, first, want = np.unique(pair, return_index=True, return_inverse=True)
        got = batch_passes._codes(c, rows)
        assert got.tolist() == want.reshape(-1).tolist()
        if len(rows):
            reads = batch_passes._reads_the_input_each(c, rows, got)
            assert reads.tolist() == [batch_passes._reads_the_input(c, int(r)) for r in rows.tolist()]
        keys = batch_items._key_codes(c, rows)
        by_first = {}
        assert keys.tolist() == [by_first.setdefault(batch_items._key(c, int(r)), len(by_first))
                                 for r in rows.tolist()]


def test_the_allocator_calls_are_found_by_name_without_a_string_per_call(tmp_path):
    """keep_allocator_cache's mallocs and frees, and slice_loops' span, by name ids and categories: no np.isin over
    each call's name string (300k objects at 942k events) nor over the category column."""
    from tracetriage.analyzers.model.names import name_tests
    from tracetriage.analyzers.whatif.levers import keep_allocator_cache as kac
    from tracetriage.analyzers.whatif.levers import slice_loops

    tr = _mixed(tmp_path)
    g = dg.build(tr)
    names = np.asarray(tr.names, dtype=object)[tr.ev.name[g.c_row]]
    is_malloc, is_free = name_tests(tr, g.c_row, kac.MALLOC.__contains__, kac.FREE.__contains__)
    assert is_malloc.tolist() == np.isin(names, list(kac.MALLOC)).tolist() and is_malloc.any()
    assert is_free.tolist() == np.isin(names, list(kac.FREE)).tolist() and is_free.any()
    assert "dtype=object" not in inspect.getsource(kac.apply)
    assert "np.isin(ev.cat" not in inspect.getsource(slice_loops._span)


def test_the_chain_signatures_and_the_pass_codes_sort_no_pairs():
    """np.unique(pair, return_inverse=True) sorts every op's pair: 158k outermost ops of one thread, 300k launch calls
    at 942k events (~35 ms of the levers' child, which is the report's tail there)."""
    from tracetriage.analyzers.analyses import fusion
    from tracetriage.analyzers.whatif.levers import batch_items, batch_passes

    for fn in (fusion.chain_table, batch_passes._codes, batch_passes._reads_the_input_each, batch_items._key_codes):
        assert "np.unique(" not in inspect.getsource(fn), fn.__qualname__


def test_the_unprofiled_device_cuts_halve_and_quarter_as_floor_division_does():
    from tracetriage.analyzers.whatif import unprofiled

    src = inspect.getsource(unprofiled.unprofile)
    assert "// 2" not in src and "// 4" not in src
    x = np.array([0, 1, 2, 3, 5, 999, 1000, 1001, 4001, 10**12], np.int64)
    assert ((x >> 1) == x // 2).all() and ((x >> 2) == x // 4).all()


def test_weight_only_int8_looks_each_signature_up_once_not_each_op():
    """The decode's projections are 10k ops of a few (name, shape) signatures at 942k events: a Python step per op
    (two scalar gathers and a dict probe) took 13 ms of the levers' child."""
    from tracetriage.analyzers.whatif.levers import weight_only_int8

    assert "for op in ops.tolist()" not in inspect.getsource(weight_only_int8.apply)


def test_value_checks_looks_at_no_op_where_the_trace_names_no_check(tmp_path, monkeypatch):
    """A value check is a predicate, a reduction and a host read: a trace without one of the three names (x5: none
    of them) is answered from its names, the outermost ops never sorted out (~16 ms of the levers' child there)."""
    from tracetriage.analyzers.whatif.levers import value_checks

    tr = _mixed(tmp_path)
    c = Context(tr, dg.build(tr))

    def no_ops(*a, **k):
        raise AssertionError("the ops were looked at")
    monkeypatch.setattr(value_checks, "outermost", no_ops)
    assert value_checks.find(c) == []
