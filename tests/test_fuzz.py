"""Fuzzing the loader and the analyzers with generated and mutated Kineto traces.

Valid traces are built launch by launch (a cpu_op with an External id around a launch call with a
correlation, the GPU activity on its device and stream, sometimes a stream sync), with random host
gaps, launch latencies, durations, streams and devices. Mutations then drop keys, change types,
duplicate, shuffle and cut events, and truncate or corrupt the text and the gzip stream.

Whatever the input: load() returns a Trace or raises TraceError, nothing else; analyze_trace never
raises on a loaded trace; on every device idle + kernel busy == span, the gaps never overlap and each
has exactly one cause. On valid traces the numbers also match an oracle computed from the launches.

The budget is fixed and derandomized for CI (about 20 s on two cores). To explore further:
TRACETRIAGE_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest tests/test_fuzz.py (random, not derandomized).
"""
from __future__ import annotations

import copy
import gzip
import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import kineto_factory as kf
from tracetriage.analyzers.analyses.idle import CAUSES
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.trace import Caveat, Trace, TraceError
from tracetriage.analyzers.output import serialize
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.voice import report as voice

_EXPLORE = int(os.environ.get("TRACETRIAGE_FUZZ_EXAMPLES", "0"))


def budget(n: int):
    """n examples, derandomized (the same examples on every run), unless exploring."""
    return settings(max_examples=_EXPLORE or n, deadline=None, derandomize=not _EXPLORE, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module", autouse=True)
def _no_cache():
    old = os.environ.get("TRACETRIAGE_NO_CACHE")
    os.environ["TRACETRIAGE_NO_CACHE"] = "1"
    yield
    if old is None:
        del os.environ["TRACETRIAGE_NO_CACHE"]
    else:
        os.environ["TRACETRIAGE_NO_CACHE"] = old


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


# --- valid traces ------------------------------------------------------------------------------------------

GPU_KINDS = {"kernel": ("void k{i}<float>(float*)", "cudaLaunchKernel"),
             "gpu_memcpy": ("Memcpy HtoD (Pageable -> Device)", "cudaMemcpyAsync"),
             "gpu_memset": ("Memset (Device)", "cudaMemsetAsync")}

launch_st = st.tuples(
    st.sampled_from([(0, 7), (0, 7), (0, 20), (1, 7), (1, 13)]),        # device, stream
    st.sampled_from(["kernel", "kernel", "kernel", "gpu_memcpy", "gpu_memset"]),
    st.integers(0, 300_000),          # host time before the launch call (ns): launch-bound ... host-bound
    st.integers(200, 80_000),         # activity duration
    st.integers(1_000, 15_000),       # launch latency: call start -> earliest start on the device
    st.integers(0, 9),                # 0: a cudaStreamSynchronize follows
    st.sampled_from([None, None, "prefill", "decode_step", "ProfilerStep#3", "## odd ##"]),   # a named range around it
)


def build(specs) -> tuple[dict, dict]:
    """A Kineto document from launch specs, and the oracle: per device, its span and kernel-busy ns."""
    t, free, launches, syncs = 50_000, {}, [], []
    ranges = []
    for i, ((dev, stream), cat, host_gap, dur, latency, sync, rng) in enumerate(specs):
        call_s = t + host_gap
        g_s = max(call_s + latency, free.get((dev, stream), 0))
        name, call = GPU_KINDS[cat]
        launches.append(kf.Launch(op_start=call_s - 1_000, op_end=call_s + 5_000, call_start=call_s,
                                  call_end=call_s + 4_000, gpu_start=g_s, gpu_end=g_s + dur,
                                  kernel=name.format(i=i % 4), cat=cat, stream=stream, device=dev, call=call))
        free[(dev, stream)] = g_s + dur
        t = call_s + 5_000
        if rng:
            ranges.append((rng, call_s - 1_500, t + 500))
        if sync == 0:
            end = max(t, free[(dev, stream)]) + 1_000
            syncs.append((t, end))
            t = end
    events = kf.events_for(launches)
    for j, (s, e) in enumerate(syncs):
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": kf.PID,
                       "tid": kf.TID, "ts": round((kf.ORIGIN_NS + s) / 1000, 3), "dur": round((e - s) / 1000, 3),
                       "args": {"cbid": 131, "correlation": 500_000 + j}})
    for name, s, e in ranges:
        events.append({"ph": "X", "cat": "user_annotation", "name": name, "pid": kf.PID, "tid": kf.TID,
                       "ts": round((kf.ORIGIN_NS + s) / 1000, 3), "dur": round((e - s) / 1000, 3),
                       "args": {"External id": 900_000 + s % 1000}})
    oracle = {}
    for d in sorted({launch.device for launch in launches}):
        acts = [launch for launch in launches if launch.device == d]
        # device work: kernels and memsets (a memset writes the device's memory; only a copy over the link is idle)
        ks = sorted((launch.gpu_start, launch.gpu_end) for launch in acts if launch.cat in ("kernel", "gpu_memset"))
        busy, end = 0, -1
        for s, e in ks:  # union length
            if e > end:
                busy += e - max(s, end)
                end = e
        oracle[d] = {"span": max(launch.gpu_end for launch in acts) - min(launch.gpu_start for launch in acts),
                     "busy": busy}
    return kf.document(events, devices=(0, 1)), oracle


traces_st = st.lists(launch_st, min_size=1, max_size=40).map(build)


def check_invariants(trace: Trace):
    """analyze_trace must not raise; on each device idle + busy == span, gaps disjoint, one cause each."""
    a = analyze_trace(trace)
    for d in a.devices:
        g = d.gaps
        assert d.span_ns >= 0 and 0 <= d.kernel_busy_ns <= d.span_ns
        assert d.idle_ns + d.kernel_busy_ns == d.span_ns
        assert sum(d.by_cause_ns.values()) == d.idle_ns == int(g.dur.sum())
        assert all(v >= 0 for v in d.by_cause_ns.values())
        assert len(g.cause) == len(g.start) and set(np.unique(g.cause).tolist()) <= set(range(len(CAUSES)))
        assert (g.end > g.start).all()
        assert (g.start[1:] >= g.end[:-1]).all()                       # sorted, never overlapping
        if len(g):
            assert g.start[0] >= d.span_start and g.end[-1] <= d.span_end
    assert a.idle_ns == sum(d.idle_ns for d in a.devices)
    lines = voice.five_lines(a)
    assert len(lines) == 5 and all(isinstance(x, str) and x for x in lines)
    json.dumps(serialize.report(a), allow_nan=False, default=_np_default)       # `report --json` prints valid JSON
    for r in a.ranges[:2]:                                               # `report --range NAME`
        sub = analyze_trace(trace, r.name)
        assert sub.idle_ns <= a.idle_ns and len(voice.five_lines(sub)) == 5
        json.dumps(serialize.report(sub), allow_nan=False, default=_np_default)
    return a


def _np_default(o):
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(type(o).__name__)


def write(workdir, doc, name="t.json"):
    return kf.write(workdir / name, doc)


def load_or_error(path) -> Trace | None:
    """The loader's whole contract: a Trace, or TraceError (anything else fails the test)."""
    try:
        trace = load(path, use_cache=False)
    except TraceError as e:
        assert str(e) and "\n" not in str(e)
        event(f"TraceError: {str(e).split(': ', 2)[1][:40]}")
        return None
    event("loaded" + (" with caveats" if trace.caveats else ""))
    return trace


@pytest.mark.slow      # 150 traces against the oracle; the odd-value fuzzing builds the same traces here
@budget(150)
@given(traces_st)
def test_valid_traces_load_cleanly_and_match_the_oracle(workdir, built):
    doc, oracle = built
    trace = load(write(workdir, doc), use_cache=False)
    assert trace.caveats == ()
    a = check_invariants(trace)
    assert {d.device: {"span": d.span_ns, "busy": d.kernel_busy_ns} for d in a.devices} == oracle


@pytest.mark.slow      # the longest budgets; the oracle, odd-value, corruption and JSON fuzzing stand for them
@budget(60)
@given(traces_st, st.randoms(use_true_random=False))
def test_event_order_and_exact_duplicates_do_not_change_the_answer(workdir, built, rnd):
    doc, _ = built
    want = check_invariants(load(write(workdir, doc), use_cache=False))
    shuffled = copy.deepcopy(doc)
    rnd.shuffle(shuffled["traceEvents"])
    doubled = copy.deepcopy(doc)
    doubled["traceEvents"] += copy.deepcopy(rnd.sample(doc["traceEvents"], k=len(doc["traceEvents"]) // 2))
    rnd.shuffle(doubled["traceEvents"])
    for variant in (shuffled, doubled):
        got = check_invariants(load(write(workdir, variant), use_cache=False))
        assert (got.span_ns, got.kernel_busy_ns, got.idle_ns, got.by_cause_ns) == \
               (want.span_ns, want.kernel_busy_ns, want.idle_ns, want.by_cause_ns)
        assert [(h.name, h.device_us) for h in got.hotspots] == [(h.name, h.device_us) for h in want.hotspots]


@pytest.mark.slow   # 60 traces each analysed whole twice (~11 s of a core); the three fuzz tests beside it stay fast
@budget(60)
@given(traces_st)
def test_one_odd_value_costs_its_own_event_not_the_file(workdir, built):
    # a string ts fails the strict decode of the whole file; the lenient decode must salvage the rest exactly
    doc, _ = built
    want = check_invariants(load(write(workdir, doc), use_cache=False))
    odd = copy.deepcopy(doc)
    odd["traceEvents"].append({"ph": "X", "cat": "kernel", "name": "odd", "pid": 0, "tid": 7, "ts": "later",
                               "dur": 1.0, "args": {"device": 0, "stream": 7, "correlation": 1}})
    trace = load(write(workdir, odd), use_cache=False)
    assert trace.caveats == (Caveat("dropped_events", 1),)
    got = check_invariants(trace)
    assert (got.span_ns, got.kernel_busy_ns, got.by_cause_ns, got.hotspots) == \
           (want.span_ns, want.kernel_busy_ns, want.by_cause_ns, want.hotspots)


# --- mutated traces -----------------------------------------------------------------------------------------

KEYS = ["ts", "dur", "ph", "cat", "name", "pid", "tid", "args"]
ARG_KEYS = ["External id", "correlation", "device", "stream", "bytes", "Input Dims", "Input type"]
ODD_VALUES = [None, True, False, "x", "12.5", "", -1, 0, -1.5, 1e30, -1e30, 2 ** 70, -(2 ** 70), 1.5, [], [1, "a"],
              {}, {"a": 1}, "stream 7", "stream x", 10 ** 19, "\u2603", "1e999"]

mutation_st = st.tuples(
    st.sampled_from(["drop_key", "drop_arg", "set_key", "set_arg", "duplicate", "remove", "unknown_cat",
                     "replace_event", "shift", "set_top"]),
    st.integers(0, 10 ** 6),                      # which event
    st.sampled_from(KEYS), st.sampled_from(ARG_KEYS), st.sampled_from(ODD_VALUES),
)


def mutate(doc: dict, mutations) -> dict:
    doc = copy.deepcopy(doc)
    ev = doc["traceEvents"]
    for kind, i, key, arg, value in mutations:
        if not ev:
            break
        e = ev[i % len(ev)]
        if not isinstance(e, dict):           # an earlier mutation replaced it with a non-object
            e = {}
        if kind == "drop_key":
            e.pop(key, None)
        elif kind == "drop_arg" and isinstance(e.get("args"), dict):
            e["args"].pop(arg, None)
        elif kind == "set_key":
            e[key] = value
        elif kind == "set_arg":
            if not isinstance(e.get("args"), dict):
                e["args"] = {}
            e["args"][arg] = value
        elif kind == "duplicate":
            ev.insert(i % (len(ev) + 1), copy.deepcopy(e))
        elif kind == "remove":
            del ev[i % len(ev)]
        elif kind == "unknown_cat":
            e["cat"] = "mystery_" + str(i % 7)
        elif kind == "replace_event":
            ev[i % len(ev)] = value
        elif kind == "shift" and isinstance(e.get("ts"), (int, float)) and not isinstance(e.get("ts"), bool):
            e["ts"] = e["ts"] + (i % 2001 - 1000) / 10       # move it up to ±100 µs: overlaps, reorders
        elif kind == "set_top":
            doc[["deviceProperties", "distributedInfo", "baseTimeNanoseconds", "traceName"][i % 4]] = value
    return doc


def dumps(doc) -> str:
    """JSON text; the string "1e999" becomes the bare number 1e999 (valid JSON, beyond float range)."""
    return json.dumps(doc).replace('"1e999"', "1e999")


@pytest.mark.slow      # the longest budgets; the oracle, odd-value, corruption and JSON fuzzing stand for them
@budget(300)
@given(traces_st, st.lists(mutation_st, min_size=1, max_size=12))
def test_mutated_traces_load_or_fail_cleanly_and_analyse_without_raising(workdir, built, mutations):
    doc, _ = built
    trace = load_or_error(write(workdir, dumps(mutate(doc, mutations))))
    if trace is not None:
        check_invariants(trace)


@pytest.mark.slow   # 250 damaged copies each read (~11 s of a core): the mutated and arbitrary-JSON fuzz stay fast
@budget(250)
@given(traces_st, st.sampled_from(["cut", "cut_gz", "flip", "flip_gz", "insert"]), st.integers(0, 10 ** 9),
       st.binary(min_size=1, max_size=8))
def test_truncated_or_corrupted_files_load_or_fail_cleanly(workdir, built, how, at, junk):
    doc, _ = built
    data = json.dumps(doc).encode()
    if how.endswith("_gz"):
        data = gzip.compress(data, compresslevel=1)
    i = at % len(data)
    if how.startswith("cut"):
        data = data[:i]
    elif how.startswith("flip"):
        data = data[:i] + bytes([data[i] ^ (1 << (at % 8))]) + data[i + 1:]
    else:
        data = data[:i] + junk + data[i:]
    trace = load_or_error(kf.write(workdir / ("t.json.gz" if how.endswith("_gz") else "t.json"), data, gz=False))
    if trace is not None:
        check_invariants(trace)


@pytest.mark.slow   # 150 arbitrary documents (~3 s of a core); the fuzz tests beside it keep the loader fast
@budget(150)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(max_size=5),
                    lambda children: st.lists(children, max_size=4) | st.dictionaries(
                        st.sampled_from(["traceEvents", "ph", "ts", "dur", "args", "cat", "x"]), children, max_size=4),
                    max_leaves=30))
def test_arbitrary_json_loads_or_fails_cleanly(workdir, value):
    trace = load_or_error(write(workdir, dumps(value)))
    if trace is not None:
        check_invariants(trace)
