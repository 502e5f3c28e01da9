"""Copies pinned and asynchronous already (analyses.copies_async) are told to move fewer bytes, not to pin and copy
non_blocking again; a trace with no kernel is told so, never to overlap copies with compute."""
import copy

import claim_traces
import kineto_factory as kf
from tracetriage.analyzers.analyses.copies_async import copies_async
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file


def _write(tmp_path, pinned):
    return kf.write(tmp_path / f"copies{int(pinned)}.json", claim_traces.copy_benchmark(pinned=pinned))


def test_pinned_copies_whose_calls_return_at_once_are_async_already(tmp_path):
    c = copies_async(load(_write(tmp_path, True)))
    assert c.already and c.streams == 2 and c.kernels == 0
    assert c.overlap_ns > 0 and c.call_median_ns == 6_000


def test_pageable_copies_that_hold_the_host_are_not(tmp_path):
    c = copies_async(load(_write(tmp_path, False)))
    assert not c.already and c.pinned_async_ns == 0


def test_async_pinned_copies_are_told_fewer_bytes_not_non_blocking(tmp_path):
    out = serialize.report(analyze_file(_write(tmp_path, True)))
    nx = out["lines"][4]
    assert nx.startswith("Next: move fewer bytes over the link: the copies are pinned and asynchronous already")
    assert "non_blocking=True" not in nx and "pin_memory" not in nx
    assert "no kernel runs here: the copies are the workload" in nx
    assert claims.check(out) == []


def test_pageable_copies_without_kernels_overlap_each_other_not_compute(tmp_path):
    out = serialize.report(analyze_file(_write(tmp_path, False)))
    nx = out["lines"][4]
    assert nx.startswith("Next: pin host memory, copy with non_blocking=True on a side stream so the copies to and "
                         "from the device overlap each other")
    assert "overlap compute" not in nx
    assert claims.check(out) == []


def test_the_checker_catches_overlapping_compute_that_is_not_there(tmp_path):
    out = serialize.report(analyze_file(_write(tmp_path, False)))
    bad = copy.deepcopy(out)
    bad["lines"][4] = bad["lines"][4].replace("so the copies to and from the device overlap each other",
                                              "so copies overlap compute")
    assert "the Next overlaps copies with compute, but no kernel runs in the trace" in claims.check(bad)
