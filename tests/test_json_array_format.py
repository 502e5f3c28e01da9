"""Chrome's JSON Array Format: a trace that is a bare list of events (chrome://tracing and Perfetto read it).

It carries only the events: no deviceProperties (so no device name, hence no peaks), no distributedInfo,
no baseTimeNanoseconds. Everything else must come out as from the object that torch.profiler writes.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

import kineto_factory as kf
from tracetriage.analyzers.loading import decode as decode_mod
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.cli import main

TRACES = Path(__file__).resolve().parent.parent / "traces"
OBJECT_ONLY = ("deviceProperties", "distributedInfo", "baseTimeNanoseconds")


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch):
    monkeypatch.setenv("TRACETRIAGE_NO_CACHE", "1")


def report_json(capsys, path: Path) -> dict:
    assert main(["report", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def numbers(path: Path) -> dict:
    a = analyze_trace(load(path, use_cache=False))
    return {"span": a.span_ns, "busy": a.kernel_busy_ns, "idle": a.idle_ns, "by_cause": a.by_cause_ns,
            "hot": [(h.name, h.device_us) for h in a.hotspots], "regime": a.verdict.regime}


@pytest.mark.parametrize("sample", ["smell-sync-item.json.gz", "gpt-graphs.json.gz"])
def test_a_real_trace_saved_as_a_bare_list_reports_as_its_object_without_the_object_only_keys(tmp_path, capsys, sample):
    doc = json.loads(gzip.decompress((TRACES / sample).read_bytes()))
    bare = kf.write(tmp_path / "trace.json", doc["traceEvents"])
    stripped = kf.write(tmp_path / "trace-object.json", {k: v for k, v in doc.items() if k not in OBJECT_ONLY})
    a, b = report_json(capsys, bare), report_json(capsys, stripped)
    assert a["trace"]["device_name"] is None
    for r in (a, b):
        r["trace"].pop("path")
        r["lines"][0] = r["lines"][0].replace("trace-object.json", "trace.json")
    assert a == b
    # and against the original: the same timeline, idle split and regime; only the device's name (and its peaks) is gone
    original = tmp_path / "original.json.gz"
    original.write_bytes((TRACES / sample).read_bytes())
    assert numbers(bare) == numbers(original)
    assert set(load(original, use_cache=False).device_names.values()) == {"NVIDIA H200"}
    assert load(bare, use_cache=False).device_names == {}


def test_a_bare_list_gzipped_reads_too(tmp_path, capsys):
    events = kf.events_for(kf.chain(20))
    bare = kf.write(tmp_path / "bare.json.gz", events)
    obj = kf.write(tmp_path / "obj.json", {"traceEvents": events})
    assert numbers(bare) == numbers(obj)


@pytest.mark.slow      # a big file, split across processes
def test_a_big_bare_list_splits_across_processes_like_the_object_form(tmp_path):
    pad = "x" * ((decode_mod.PARALLEL_MIN_BYTES + (1 << 20)) // 6000)
    events = [{**e, "args": {**e.get("args", {}), "padding": pad}} for e in kf.events_for(kf.chain(2000))]
    path = kf.write(tmp_path / "big-bare.json", events)
    data = bytearray(path.read_bytes())
    parts = decode_mod.decode(data, path)
    assert len(parts) == 2 and all(len(p.cols["ts"]) > 2000 for p in parts)   # it did split, mid-list
    assert data == path.read_bytes()                                         # every borrowed byte put back
    whole = decode_mod._decode_whole(data, path)
    for k in ("ts", "dur", "pid", "tid", "ext", "corr", "device", "stream"):
        assert np.array_equal(np.concatenate([p.cols[k] for p in parts]), whole.cols[k]), k
    assert parts[0].events_in_file == whole.events_in_file == 10_000


def test_a_bare_list_with_an_odd_event_keeps_the_others(tmp_path):
    events = kf.events_for(kf.chain(10))
    k = next(i for i, e in enumerate(events) if e.get("cat") == "kernel")
    events[k] = {**events[k], "ts": "soon"}                # the lenient decoder drops this one event only
    trace = load(kf.write(tmp_path / "odd.json", events + [7, "x"]), use_cache=False)
    complete = sum(e["ph"] == "X" for e in events)
    assert trace.events_in_file == len(events) + 2 and len(trace.ev) == complete - 1


@pytest.mark.parametrize("doc, message", [
    ([1, 2, 3], "JSON, but not a trace: a list, but of no event objects"),
    ([], "the trace has no events"),
])
def test_a_list_that_holds_no_events_says_so(tmp_path, capsys, doc, message):
    path = kf.write(tmp_path / "x.json", doc)
    code = main(["report", str(path)])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.startswith("error: ") and message in err and err.count("\n") == 1, err
