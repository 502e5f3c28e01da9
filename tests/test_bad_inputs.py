"""Bad traces, big traces, hostile input: each has a defined outcome, and none a traceback.

Two outcomes only:
- a report (exit 0) whose "Caveat: ..." lines say what was odd and what was done about it;
- one line `error: ...` on stderr that says what is wrong and what to do (exit 2).

The 2 GB trace runs only with TRACETRIAGE_BIG_TESTS=1 (it takes about a minute to write
and 20 s to read, and 7 GB of memory); its refusal under a small memory budget runs always.
"""
from __future__ import annotations

import copy
import gzip
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

import kineto_factory as kf
from tracetriage.analyzers.loading import decode as decode_mod
from tracetriage.analyzers.loading import formats
from tracetriage.analyzers.loading import memory as memory_mod
from tracetriage.analyzers.loading import read as read_mod
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.trace import Caveat
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.voice.common import caveat
from tracetriage.analyzers.voice.report import five_lines, next_experiment
from tracetriage.cli import build_parser, main

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "traces"


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch):
    monkeypatch.setenv("TRACETRIAGE_NO_CACHE", "1")
    monkeypatch.delenv("TRACETRIAGE_MEMORY_BUDGET", raising=False)


def report(capsys, *args) -> tuple[int, str, str]:
    """`tracetriage report ...` in-process: (exit code, stdout, stderr)."""
    code = main(["report", *map(str, args)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def assert_user_error(capsys, path, *phrases) -> str:
    code, out, err = report(capsys, path)
    assert code == 2, out + err
    assert out == ""
    assert err.startswith("error: ") and err.count("\n") == 1, err  # one line
    for p in phrases:
        assert p in err, err
    return err


def caveats(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("Caveat: ")]


def good_doc(n: int = 20, **kw) -> dict:
    return kf.document(kf.events_for(kf.chain(n, **kw)))


def numbers(path) -> dict:
    """What the report says in numbers: span, busy, idle by cause, hotspot times."""
    a = analyze_trace(load(path, use_cache=False))
    return {"span": a.span_ns, "busy": a.kernel_busy_ns, "idle": a.idle_ns, "by_cause": a.by_cause_ns,
            "hot": [(h.name, h.device_us) for h in a.hotspots]}


# --- files that are not usable traces: error, exit 2 ------------------------------------------------

def test_truncated_gzip_says_truncated_and_to_fetch_it_again(tmp_path, capsys):
    data = gzip.compress(json.dumps(good_doc()).encode())
    path = kf.write(tmp_path / "cut.json.gz", data[: len(data) // 2])
    assert_user_error(capsys, path, "not a readable gzip file", "truncated", "fetch or export it again")


def test_corrupt_gzip_says_corrupt(tmp_path, capsys):
    data = bytearray(gzip.compress(json.dumps(good_doc()).encode()))
    data[-8] ^= 0xFF  # the CRC
    path = kf.write(tmp_path / "crc.json.gz", bytes(data))
    assert_user_error(capsys, path, "not a readable gzip file", "corrupt")


def test_truncated_json_says_truncated(tmp_path, capsys):
    text = json.dumps(good_doc())
    path = kf.write(tmp_path / "cut.json", text[: len(text) * 2 // 3])
    assert_user_error(capsys, path, "not valid JSON", "truncated")


@pytest.mark.parametrize("content", [b"hello, not a trace\n", b"\xef\xbb\xbf{}", b"{'traceEvents': []}",
                                     b"\x00\x01\x02"],
                         ids=["text", "bom", "python-repr", "binary"])
def test_not_json_says_what_a_trace_is(tmp_path, capsys, content):
    assert_user_error(capsys, kf.write(tmp_path / "x.json", content), "not valid JSON", "torch.profiler")


@pytest.mark.parametrize("doc", [{"name": "x"}, [1, 2, 3], '"traceEvents"', {"traceEvents": {"0": {}}},
                                 {"traceEvents": None}, 42],
                         ids=["object", "list", "string", "events-object", "events-null", "number"])
def test_json_that_is_not_a_trace_says_so(tmp_path, capsys, doc):
    assert_user_error(capsys, kf.write(tmp_path / "x.json", doc), "JSON, but not a trace", "traceEvents")


def test_json_nested_too_deeply_is_an_error_not_a_recursion_crash(tmp_path, capsys):
    path = kf.write(tmp_path / "deep.json", b'{"traceEvents": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    assert_user_error(capsys, path, "nested too deeply")


def test_empty_file_and_empty_gzip(tmp_path, capsys):
    assert_user_error(capsys, kf.write(tmp_path / "e.json", b"  \n"), "the file is empty")
    assert_user_error(capsys, kf.write(tmp_path / "e.json.gz", b""), "the file is empty")


def test_empty_trace_events_says_the_profiler_recorded_nothing(tmp_path, capsys):
    path = kf.write(tmp_path / "empty.json", kf.document([]))
    assert_user_error(capsys, path, "no events", "recorded nothing")


def test_trace_without_a_usable_complete_event_is_an_error(tmp_path, capsys):
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}},
              {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": "soon", "dur": 3}]
    assert_user_error(capsys, kf.write(tmp_path / "m.json", kf.document(events)), "none of its 2 events")


def test_directory_without_traces(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("hello")
    assert_user_error(capsys, tmp_path, "no traces in")


def test_missing_file(tmp_path, capsys):
    assert_user_error(capsys, tmp_path / "nope.json.gz", "no such file")


def test_a_fifo_is_refused_at_once_not_read_forever(tmp_path, capsys):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    t = time.monotonic()
    assert_user_error(capsys, fifo, "not a regular file")
    assert time.monotonic() - t < 5


def test_a_directory_of_only_bad_ranks_is_an_error(tmp_path, capsys):
    kf.write(tmp_path / "rank0.json", b"{")
    kf.write(tmp_path / "rank1.json.gz", b"\x1f\x8b\x08")
    assert_user_error(capsys, tmp_path, "no usable trace")


# --- odd traces: a report, with caveats ---------------------------------------------------------------

def test_cpu_only_trace_from_torch_reports_no_gpu_activity(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, record_function

    x = torch.randn(256, 256)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(5):
            with record_function("step"):
                (x @ x).sigmoid_().sum().item()
    path = tmp_path / "cpu.json"
    prof.export_chrome_trace(str(path))
    code, out, err = report(capsys, path)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("Measured: ") and "no GPU activity" in lines[0]
    assert any("no GPU activity" in c for c in caveats(out))
    assert "memory-bound" not in out and "compute-bound" not in out  # no regime claimed without a device


def test_trace_whose_launches_have_no_gpu_rows_reports_no_gpu_activity(tmp_path, capsys):
    events = [e for e in kf.events_for(kf.chain(10)) if e.get("cat") in ("cpu_op", "cuda_runtime")]
    code, out, _ = report(capsys, kf.write(tmp_path / "nogpu.json", kf.document(events)))
    assert code == 0 and "no GPU activity" in out.splitlines()[0]


def test_trace_with_copies_but_no_kernels(tmp_path, capsys):
    copies = [kf.Launch(**{**launch.__dict__, "cat": "gpu_memcpy", "kernel": "Memcpy HtoD (Pageable -> Device)",
                           "call": "cudaMemcpyAsync"}) for launch in kf.chain(6)]
    path = kf.write(tmp_path / "copies.json", kf.document(kf.events_for(copies)))
    code, out, _ = report(capsys, path)
    assert code == 0
    assert "(0 kernels," in out.splitlines()[0]
    assert "no kernels ran" in out.splitlines()[3]
    n = numbers(path)
    assert n["busy"] == 0 and n["idle"] == n["span"] > 0


BAD_TIMES = [("ts", -5.0), ("ts", None), ("ts", "12.5"), ("ts", True), ("ts", [1]), ("ts", 1e30),
             ("dur", -3.0), ("dur", "abc"), ("dur", None), ("dur", 1e13), ("ts", "DROP"), ("dur", "DROP")]


def test_events_with_bad_ts_or_dur_are_dropped_with_a_caveat(tmp_path, capsys):
    doc = good_doc(40)
    t0 = doc["traceEvents"][0]["ts"]
    for i, (key, value) in enumerate(BAD_TIMES):  # host and GPU rows; were they kept, they would change the numbers
        e = ({"ph": "X", "cat": "python_function", "name": f"f{i}", "pid": kf.PID, "tid": kf.TID} if i % 2 else
             {"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7,
              "args": {"device": 0, "stream": 7, "correlation": 900_000 + i}})
        e.update(ts=t0 + 100 * i, dur=250.0)
        if value == "DROP":
            del e[key]
        else:
            e[key] = value
        doc["traceEvents"].append(e)
    path = kf.write(tmp_path / "bad.json", doc)
    code, out, _ = report(capsys, path)
    assert code == 0
    assert caveats(out) == [f"Caveat: {len(BAD_TIMES)} complete events had a missing, negative, non-numeric or "
                            "out-of-range ts/dur and were dropped."]
    assert numbers(path) == numbers(kf.write(tmp_path / "clean.json", good_doc(40)))


def test_a_number_beyond_float_range_drops_only_its_event(tmp_path):
    text = json.dumps(good_doc(10)).replace('"dur": 10.0', '"dur": 1e999', 1)
    trace = load(kf.write(tmp_path / "inf.json", text), use_cache=False)
    assert trace.caveats == (Caveat("dropped_events", 1),)
    assert caveat(trace.caveats[0]) == ("1 complete event had a missing, negative, non-numeric or out-of-range "
                                              "ts/dur and was dropped")


def test_ids_beyond_int64_do_not_crash_the_loader(tmp_path):
    doc = good_doc(10)
    doc["traceEvents"][2]["args"]["correlation"] = 10 ** 30   # a kernel: now unlinked (its External id too: by the
    doc["traceEvents"][2]["args"]["External id"] = 10 ** 30   # one it shares with its call alone, it would link)
    doc["traceEvents"][5]["pid"] = 10 ** 30                    # an op on a thread of its own
    trace = load(kf.write(tmp_path / "big-ids.json", doc), use_cache=False)
    assert len(trace.ev) == 30 and trace.caveats[0] == Caveat("unlinked_gpu", 1, 10)


def test_missing_correlation_counts_the_unlinked_idle_as_other_with_a_caveat(tmp_path, capsys):
    doc = good_doc(20)
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":   # neither key links it (an External id its call alone shares would)
            del e["args"]["correlation"], e["args"]["External id"]
    path = kf.write(tmp_path / "nocorr.json", doc)
    code, out, _ = report(capsys, path)
    assert code == 0
    assert any("20 of 20 GPU activities have no launch call" in c and "counts as other" in c for c in caveats(out))
    n = numbers(path)
    assert n["idle"] > 0 and n["by_cause"]["other"] == n["idle"]
    assert n["busy"] == numbers(kf.write(tmp_path / "good.json", good_doc(20)))["busy"]


def test_an_unlinked_trace_is_not_told_to_move_fewer_bytes_because_of_0_percent(tmp_path):
    doc = good_doc(20)
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":   # neither key links it (an External id its call alone shares would)
            del e["args"]["correlation"], e["args"]["External id"]
    a = analyze_trace(load(kf.write(tmp_path / "nocorr.json", doc), use_cache=False))
    assert a.verdict.memory_us == 0
    assert "because 0% of kernel time" not in five_lines(a)[4], five_lines(a)[4]
    assert next_experiment(a)["lever"].startswith("capture again with both CPU and CUDA activity")


def test_missing_external_id_charges_gpu_time_to_the_op_around_the_launch(tmp_path, capsys):
    doc = good_doc(20)
    for e in doc["traceEvents"]:
        if e.get("cat") == "cuda_runtime":
            del e["args"]["External id"]
    path = kf.write(tmp_path / "noext.json", doc)
    code, out, _ = report(capsys, path)
    assert code == 0 and caveats(out) == []      # no id to distrust: nothing to say
    good = numbers(kf.write(tmp_path / "good.json", good_doc(20)))
    n = numbers(path)
    assert n["idle"] == good["idle"] and n["by_cause"] == good["by_cause"]
    assert {name for name, _ in n["hot"]} == {"aten::add"}   # the op that encloses each launch on its thread


def test_launch_outside_any_op_lists_gpu_time_under_the_kernel_name(tmp_path, capsys):
    doc = good_doc(20)
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") != "cpu_op"]   # like a Triton launch
    for e in doc["traceEvents"]:
        if e.get("cat") == "cuda_runtime":
            del e["args"]["External id"]
    n = numbers(kf.write(tmp_path / "noop.json", doc))
    assert {name for name, _ in n["hot"]} == {"void k0<float>(float*)", "void k1<float>(float*)",
                                              "void k2<float>(float*)"}


def test_an_external_id_that_no_op_has_gets_a_caveat(tmp_path, capsys):
    doc = good_doc(20)
    for e in doc["traceEvents"]:
        if e.get("cat") == "cpu_op":
            del e["args"]["External id"]
    code, out, _ = report(capsys, kf.write(tmp_path / "ops-noext.json", doc))
    assert code == 0
    # each launch still sits inside its op: time places it, and the caveat says so
    assert any(c.startswith("Caveat: 20 of 20 runtime calls carry an External id that names no op around them")
               for c in caveats(out))


def test_an_external_id_with_no_op_and_no_op_around_the_launch_gets_a_caveat(tmp_path, capsys):
    doc = good_doc(20)
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") != "cpu_op"]
    code, out, _ = report(capsys, kf.write(tmp_path / "no-ops.json", doc))
    assert code == 0
    assert any("20 runtime calls belong to no op: their External id names no cpu_op and no op encloses them"
               in c for c in caveats(out))


def test_unknown_categories_and_phases_are_ignored(tmp_path, capsys):
    doc = good_doc(20)
    t0 = doc["traceEvents"][0]["ts"]
    doc["traceEvents"] += [
        {"ph": "X", "cat": "quantum_op", "name": "entangle", "pid": kf.PID, "tid": kf.TID, "ts": t0 + 3, "dur": 50},
        {"ph": "X", "cat": "Kernel_v9", "name": "future_kernel", "pid": 0, "tid": 7, "ts": t0 + 5, "dur": 80,
         "args": {"device": 0, "stream": 7}},
        {"ph": "Z", "cat": "kernel", "name": "odd phase", "pid": 0, "tid": 7, "ts": t0, "dur": 9},
        {"ph": "i", "s": "g", "name": "instant", "pid": kf.PID, "tid": kf.TID, "ts": t0},
        {"ph": "C", "name": "counter", "pid": kf.PID, "ts": t0, "args": {"bytes": 5}},
    ]
    path = kf.write(tmp_path / "unknown.json", doc)
    code, out, _ = report(capsys, path)
    assert code == 0 and caveats(out) == []
    assert numbers(path) == numbers(kf.write(tmp_path / "good.json", good_doc(20)))


def test_duplicated_events_are_counted_once_with_a_caveat(tmp_path, capsys):
    doc = good_doc(20)
    doc["traceEvents"] = doc["traceEvents"] + copy.deepcopy(doc["traceEvents"][:40])  # 8 launches written twice
    path = kf.write(tmp_path / "dup.json", doc)
    code, out, _ = report(capsys, path)
    assert code == 0
    assert caveats(out) == ["Caveat: 24 events repeated an earlier one exactly (same category, name, times, thread "
                            "and ids) and counted once."]
    assert numbers(path) == numbers(kf.write(tmp_path / "good.json", good_doc(20)))


def test_python_calls_in_one_microsecond_with_their_own_python_ids_are_not_duplicates(tmp_path, capsys):
    # (moe_fp32_bs8_a100, SwitchTransformers: 99 zero-length calls such as list.append, each with its own
    # "Python id", fell in the same integer microsecond as the one before and were dropped as "exact repeats")
    doc = good_doc(20)
    t0 = doc["traceEvents"][0]["ts"]
    calls = [{"ph": "X", "cat": "python_function", "name": "<built-in method append of list object at 0x7f6b>",
              "pid": kf.PID, "tid": kf.TID, "ts": t0 + 1, "dur": 0, "args": {"Python parent id": 1, "Python id": i}}
             for i in (10, 11, 12)]
    doc["traceEvents"] += calls
    code, out, _ = report(capsys, kf.write(tmp_path / "same-us.json", doc))
    assert code == 0 and caveats(out) == []
    doc["traceEvents"] += copy.deepcopy(calls[:1])     # the same call (same Python id) written twice is one
    code, out, _ = report(capsys, kf.write(tmp_path / "twice.json", doc))
    assert caveats(out) == ["Caveat: 1 event repeated an earlier one exactly (same category, name, times, thread "
                            "and ids) and counted once."]


def test_a_whole_trace_written_twice_gives_the_same_report(tmp_path):
    doc = good_doc(20)
    doc["traceEvents"] = doc["traceEvents"] * 2
    assert numbers(kf.write(tmp_path / "twice.json", doc)) == numbers(kf.write(tmp_path / "once.json", good_doc(20)))


def test_overlapping_kernels_on_one_stream_never_make_idle_negative(tmp_path, capsys):
    launches = kf.chain(10, gap_ns=2_000)
    # kernel 5 starts 9 µs before kernel 4 ends; kernel 7 lies entirely inside kernel 6
    l4, l6 = launches[4], launches[6]
    launches[5] = kf.Launch(**{**launches[5].__dict__, "gpu_start": l4.gpu_end - 9_000})
    launches[7] = kf.Launch(**{**launches[7].__dict__, "gpu_start": l6.gpu_start + 1_000,
                               "gpu_end": l6.gpu_end - 1_000})
    path = kf.write(tmp_path / "overlap.json", kf.document(kf.events_for(launches)))
    code, out, _ = report(capsys, path)
    assert code == 0
    assert any("2 GPU activities start more than 2.0 µs before the previous one on their stream" in c
               for c in caveats(out))
    a = analyze_trace(load(path, use_cache=False))
    (d,) = a.devices
    assert d.idle_ns >= 0 and all(v >= 0 for v in d.by_cause_ns.values())
    assert d.idle_ns + d.kernel_busy_ns == d.span_ns
    assert (d.gaps.end > d.gaps.start).all() and (d.gaps.start[1:] >= d.gaps.end[:-1]).all()


def test_programmatic_dependent_launch_overlaps_in_real_traces_get_no_caveat():
    # gpt-eager has 400 sub-µs overlaps of cuBLASLt's split-K pairs on one stream
    # (tracetriage.analyzers.analyses.streams)
    assert load(TRACES / "gpt-eager.json.gz", use_cache=False).caveats == ()


def test_several_devices_and_streams_get_per_device_idle_and_no_caveat(tmp_path, capsys):
    launches = (kf.chain(10, stream=7, device=0) + kf.chain(10, stream=20, device=0, t0=150_000, queued=True)
                + kf.chain(12, stream=7, device=1, t0=120_000, gap_ns=50_000))
    path = kf.write(tmp_path / "multi.json", kf.document(kf.events_for(launches), devices=(0, 1)))
    code, out, _ = report(capsys, path)
    assert code == 0 and caveats(out) == []
    a = analyze_trace(load(path, use_cache=False))
    assert [d.device for d in a.devices] == [0, 1]
    for d in a.devices:
        assert d.idle_ns + d.kernel_busy_ns == d.span_ns
        assert sum(d.by_cause_ns.values()) == d.idle_ns
    assert a.idle_ns == sum(d.idle_ns for d in a.devices)
    code = main(["report", str(path), "--json"])
    per_device = json.loads(capsys.readouterr().out)["idle"]["per_device"]
    assert [p["device"] for p in per_device] == [0, 1]


def test_old_torch1_trace_with_absolute_integer_timestamps_reads_like_a_new_one(tmp_path, capsys):
    launches = kf.chain(20)
    launches[9] = kf.Launch(**{**launches[9].__dict__, "cat": "gpu_memcpy",
                               "kernel": "Memcpy HtoD (Pageable -> Device)", "call": "cudaMemcpyAsync"})
    old = kf.write(tmp_path / "torch1.json", kf.document(kf.events_for(launches, flavour="torch1"), flavour="torch1"))
    new = kf.write(tmp_path / "torch2.json", kf.document(kf.events_for(launches)))
    raw = json.loads(old.read_text())["traceEvents"]
    assert {e["cat"] for e in raw} == {"Operator", "Runtime", "Kernel", "Memcpy"}
    assert raw[0]["ts"] > 1.6e15 and isinstance(raw[0]["ts"], int)
    assert any(e["tid"] == "stream 7" for e in raw) and "external id" in raw[1]["args"]
    code, out, _ = report(capsys, old)
    assert code == 0 and caveats(out) == []
    trace = load(old, use_cache=False)
    assert sorted(set(trace.ev.stream[trace.ev.cat == 6].tolist())) == [7]
    assert numbers(old) == numbers(new)           # ops linked through the lower-case "external id" too
    assert numbers(old)["hot"][0][0] == "aten::add"


def _padded_events(events: list[dict], total_bytes: int) -> list[dict]:
    """Each event with an ignored arg that makes the whole list about total_bytes of JSON."""
    pad = "x" * max(0, total_bytes // len(events) - 200)
    return [{**e, "args": {**e.get("args", {}), "padding": pad}} for e in events]


def test_string_thread_ids_mean_the_same_thread_in_both_halves_of_a_split_decode(tmp_path):
    # torch 1.x wrote tids as strings; each half of a big file is decoded by its own process
    events = _padded_events(kf.events_for(kf.chain(2000, gap_ns=3_000), flavour="torch1"),
                            decode_mod.PARALLEL_MIN_BYTES + (1 << 20))
    path = kf.write(tmp_path / "big-torch1.json", kf.document(events, flavour="torch1"))
    parts = decode_mod.decode(bytearray(path.read_bytes()), path)
    assert len(parts) == 2 and all(len(p.cols["ts"]) > 2000 for p in parts)   # it did split, mid-list
    trace = load(path, use_cache=False)
    assert len(np.unique(trace.ev.tid[trace.ev.cat == 1])) == 1              # one host thread, not two
    assert len(trace.ev) == 6000 and trace.caveats == ()
    assert numbers(path)["hot"][0][0] == "aten::add"


def test_split_decode_equals_one_process_decode_and_keeps_keys_after_the_events(tmp_path):
    doc = kf.document(_padded_events(kf.events_for(kf.chain(2000)), decode_mod.PARALLEL_MIN_BYTES + (1 << 20)))
    doc["deviceProperties"] = doc.pop("deviceProperties")   # after traceEvents: lands in the second half
    doc["distributedInfo"] = {"rank": 3}
    path = kf.write(tmp_path / "split.json", doc)
    data = bytearray(path.read_bytes())
    parts = decode_mod.decode(data, path)
    assert len(parts) == 2 and all(len(p.cols["ts"]) > 2000 for p in parts)
    assert data == path.read_bytes()       # the in-place split put back every byte it borrowed
    whole = decode_mod._decode_whole(data, path)
    for k in ("ts", "dur", "pid", "tid", "ext", "corr", "device", "stream"):
        assert np.array_equal(np.concatenate([p.cols[k] for p in parts]), whole.cols[k]), k
    trace = load(path, use_cache=False)
    assert trace.device_names == {0: "NVIDIA H200"} and trace.rank == 3
    assert trace.events_in_file == whole.events_in_file == 10_000 and len(trace.ev) == 6000


def test_diff_against_a_cpu_only_trace_is_a_user_error_not_an_internal_failure(tmp_path, capsys):
    events = [e for e in kf.events_for(kf.chain(10)) if e.get("cat") == "cpu_op"]
    cpu = kf.write(tmp_path / "cpu.json", kf.document(events))
    gpu = kf.write(tmp_path / "gpu.json", good_doc(10))
    for before, after in ((cpu, gpu), (gpu, cpu)):
        code = main(["diff", str(before), str(after)])
        out, err = capsys.readouterr()
        assert code == 2 and "internal failure" not in err, err
        assert err.startswith("error: ") and "cpu.json: no GPU activity" in err


# --- directories of ranks ----------------------------------------------------------------------------

def test_a_directory_mixing_good_and_bad_ranks_reports_the_good_ones(tmp_path, capsys):
    shutil.copy(TRACES / "ddp" / "rank0.json.gz", tmp_path / "rank0.json.gz")
    data = (TRACES / "ddp" / "rank1.json.gz").read_bytes()
    kf.write(tmp_path / "rank1.json.gz", data[: len(data) // 3])
    kf.write(tmp_path / "rank2.json", b"not json")
    kf.write(tmp_path / "rank3.json", kf.document([]))
    code, out, err = report(capsys, tmp_path)
    assert code == 0, err
    assert "(3 of 4 files unusable)" in out.splitlines()[0]
    cav = caveats(out)
    assert any(c.startswith("Caveat: rank1.json.gz: not a readable gzip file") and "(skipped)" in c for c in cav)
    assert any(c.startswith("Caveat: rank2.json: not valid JSON") for c in cav)
    assert any(c.startswith("Caveat: rank3.json: the trace has no events") for c in cav)


# --- memory: refuse up front what would not fit ----------------------------------------------------------

def test_a_json_too_big_for_the_memory_budget_is_refused_before_it_is_read(tmp_path, capsys, monkeypatch):
    doc = json.dumps(good_doc(5))
    path = kf.write(tmp_path / "padded.json", doc[:-1] + " " * (40 << 20) + "}")   # 42 MB of JSON
    monkeypatch.setenv("TRACETRIAGE_MEMORY_BUDGET", "100M")
    read = []
    monkeypatch.setattr(formats, "decode", lambda *a: read.append(a))   # the step load() calls
    assert_user_error(capsys, path, "too big to analyse here: 42 MB of JSON needs at least 369 MB of memory and "
                                    "105 MB is TRACETRIAGE_MEMORY_BUDGET; if the machine has the memory, raise it "
                                    "(TRACETRIAGE_MEMORY_BUDGET=1G), run it on a machine with more memory, or capture "
                                    "a shorter window")
    assert not read
    monkeypatch.undo()
    monkeypatch.setenv("TRACETRIAGE_NO_CACHE", "1")
    monkeypatch.setenv("TRACETRIAGE_MEMORY_BUDGET", "1G")
    code, out, _ = report(capsys, path)
    assert code == 0 and out.startswith("Measured: ")


def test_a_json_of_many_small_events_is_refused_by_its_event_count(tmp_path, capsys, monkeypatch):
    event = '{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1.5, "dur": 1.0},'
    n = (40 << 20) // len(event)
    path = kf.write(tmp_path / "dense.json", '{"traceEvents": [' + event * n + event[:-1] + "]}")
    monkeypatch.setenv("TRACETRIAGE_MEMORY_BUDGET", "420M")    # reads 42 MB, but not 450k events
    assert_user_error(capsys, path, f"too big to analyse here: 42 MB of JSON ({n + 1:,} events) needs about 469 MB "
                                    "of memory and 440 MB is TRACETRIAGE_MEMORY_BUDGET")
    monkeypatch.setenv("TRACETRIAGE_MEMORY_BUDGET", "2G")
    code, out, _ = report(capsys, path)
    assert code == 0 and "no GPU activity" in out


def test_a_gzip_bomb_is_refused_without_inflating_it_all_even_if_its_trailer_lies(tmp_path, capsys, monkeypatch):
    head = json.dumps(good_doc(5))[:-1].encode()
    c = zlib.compressobj(1, zlib.DEFLATED, 31)
    body = c.compress(head) + b"".join(c.compress(b" " * (1 << 20)) for _ in range(300)) + c.compress(b"}") + c.flush()
    assert len(body) < 2 << 20                               # 2 MB on disk, 300 MB of JSON
    kf.write(tmp_path / "bomb.json.gz", body)
    kf.write(tmp_path / "liar.json.gz", body[:-4] + (1000).to_bytes(4, "little"))  # ISIZE says 1 kB
    monkeypatch.setenv("TRACETRIAGE_MEMORY_BUDGET", "400M")   # reads at most (400M - 300M) / 1.3 = 80 MB
    decoded = []
    monkeypatch.setattr(formats, "decode", lambda *a: decoded.append(a))
    for name in ("bomb.json.gz", "liar.json.gz"):
        assert_user_error(capsys, tmp_path / name,
                          "too big to analyse here: more than 81 MB of JSON needs more than 419 MB of memory and "
                          "419 MB is TRACETRIAGE_MEMORY_BUDGET; if the machine has the memory, raise it "
                          "(TRACETRIAGE_MEMORY_BUDGET=1G)")
    assert not decoded


def test_a_refusal_against_the_memory_available_says_how_to_set_the_budget(tmp_path, capsys, monkeypatch):
    doc = json.dumps(good_doc(5))
    path = kf.write(tmp_path / "padded.json", doc[:-1] + " " * (40 << 20) + "}")   # 42 MB of JSON
    monkeypatch.setattr(memory_mod, "_available", lambda: 100 << 20)
    monkeypatch.setattr(memory_mod, "_cgroup_headroom", lambda: None)
    assert_user_error(capsys, path, "too big to analyse here: 42 MB of JSON needs at least 369 MB of memory and "
                                    "105 MB is available; if more memory is free than that, set "
                                    "TRACETRIAGE_MEMORY_BUDGET=1G, run it on a machine with more memory, or capture "
                                    "a shorter window")


def _whitespace_bomb(head: bytes, spaces_mb: int, tail: bytes = b"]}") -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    return (c.compress(head) + b"".join(c.compress(b" " * (1 << 20)) for _ in range(spaces_mb))
            + c.compress(tail) + c.flush())


@pytest.fixture
def small_window(monkeypatch):
    """An event-free stretch of 8 MB refused, read 1 MB at a time: the rule of 128 MB, at a test's size."""
    monkeypatch.setattr(read_mod, "NO_EVENT_BYTES", 8 << 20)
    monkeypatch.setattr(read_mod, "CHUNK_BYTES", 1 << 20)


def test_a_gzip_bomb_of_whitespace_is_refused_after_reading_a_bounded_stretch_whatever_the_budget(tmp_path, capsys,
                                                                                                 small_window):
    path = kf.write(tmp_path / "bomb.json.gz", _whitespace_bomb(b'{"traceEvents": [', 300))   # 300 MB inside 0.3 MB
    assert path.stat().st_size < 1 << 20
    assert_user_error(capsys, path, "bomb.json.gz: not a trace: its first 9 MB of JSON hold no trace event (every "
                                    'event has a "ph"): whitespace or padding, or a gzip bomb; pass the .json or '
                                    ".json.gz that torch.profiler exports")


def test_plain_json_padded_with_whitespace_is_refused_the_same_way(tmp_path, capsys, small_window):
    path = kf.write(tmp_path / "padded.json", b'{"traceEvents": [' + b" " * (40 << 20) + b"]}")
    assert_user_error(capsys, path, "padded.json: not a trace: its first 9 MB of JSON hold no trace event")


def test_whitespace_after_the_last_event_is_refused_where_it_starts(tmp_path, capsys, small_window):
    head = json.dumps(good_doc(5))[:-2].encode()           # the events, then 40 MB of spaces before "]}"
    path = kf.write(tmp_path / "tail.json.gz", _whitespace_bomb(head, 40))
    err = assert_user_error(capsys, path, "tail.json.gz: not a trace: the 9 MB of JSON after its last event (at byte ")
    after_last_event = head.rfind(read_mod.EVENT_KEY) + len(read_mod.EVENT_KEY)
    assert f"(at byte {after_last_event:,}) hold no trace event" in err


def test_a_gzip_of_several_members_with_zero_padding_reads_as_its_whole_text(tmp_path, small_window):
    text = json.dumps(good_doc(40)).encode()
    cut = len(text) // 3
    members = gzip.compress(text[:cut]) + gzip.compress(text[cut:]) + b"\x00" * 4096   # as `cat a.gz b.gz` and a
                                                                                        # padded tape
    path = kf.write(tmp_path / "members.json.gz", members)
    assert read_mod.read_bytes(path) == text
    assert numbers(path) == numbers(kf.write(tmp_path / "one.json", text))


def test_memory_budget_comes_from_the_environment_or_the_machine(monkeypatch):
    monkeypatch.setenv("TRACETRIAGE_MEMORY_BUDGET", "1.5G")
    assert memory_mod.memory_budget() == (int(1.5 * 2**30), "TRACETRIAGE_MEMORY_BUDGET")
    monkeypatch.delenv("TRACETRIAGE_MEMORY_BUDGET")
    budget, what = memory_mod.memory_budget()
    assert 0 < budget < 1 << 50 and "available" in what


def test_small_traces_load_even_when_memory_is_short(capsys, monkeypatch):
    monkeypatch.setenv("TRACETRIAGE_MEMORY_BUDGET", "1M")
    code, out, _ = report(capsys, TRACES / "smell-sync-item.json.gz")
    assert code == 0 and out.startswith("Measured: ")


def _peak_memory_of(cmd: list[str], env: dict) -> tuple[int, float, float, str]:
    """Run cmd: (exit code, seconds, peak GB of the sum of PSS over its process tree, output). PSS counts
    pages shared after a fork once; sampled every 0.1 s from /proc/PID/smaps_rollup."""
    def tree(pid):
        out, todo = [], [pid]
        while todo:
            p = todo.pop()
            out.append(p)
            try:
                for t in os.listdir(f"/proc/{p}/task"):
                    with open(f"/proc/{p}/task/{t}/children") as f:
                        todo += [int(c) for c in f.read().split()]
            except OSError:
                pass
        return out

    def pss(pid):
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                return next((int(line.split()[1]) * 1024 for line in f if line.startswith("Pss:")), 0)
        except OSError:
            return 0

    peak = 0
    t = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()))
    reader.start()
    while proc.poll() is None:
        peak = max(peak, sum(pss(p) for p in tree(proc.pid)))
        time.sleep(0.1)
    reader.join()
    return proc.returncode, time.monotonic() - t, peak / 1e9, out[0].decode()


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("TRACETRIAGE_BIG_TESTS"), reason="set TRACETRIAGE_BIG_TESTS=1 (2 GB on disk, "
                    "~8 GB of memory, ~2 minutes)")
def test_a_2gb_trace_is_analysed_within_its_memory_estimate_or_refused(tmp_path):
    path = tmp_path / "big.json"
    info = kf.write_big(TRACES / "gpt-eager.json.gz", path, 2_000_000_000)
    size = path.stat().st_size
    need = memory_mod.MEM_BASE + size + memory_mod.MEM_PER_EVENT * info["events"]
    env = {**os.environ, "TRACETRIAGE_NO_CACHE": "1"}
    env.pop("TRACETRIAGE_MEMORY_BUDGET", None)
    cli = [sys.executable, "-m", "tracetriage.cli", "report", str(path)]
    budget, _ = memory_mod.memory_budget()
    if need <= budget:
        code, secs, peak, out = _peak_memory_of(cli, env)
        print(f"\n2 GB trace: {info['events']:,} events, {size / 1e9:.2f} GB of JSON: {secs:.1f} s, "
              f"peak {peak:.2f} GB (estimate {need / 1e9:.2f} GB)")
        assert code == 0, out
        assert out.startswith("Measured: big.json on NVIDIA H200: 6,")
        # nothing odd in the reading; the one caveat a grown trace earns is the profiler's own cost (its many events)
        odd = [x for x in out.splitlines() if x.startswith("Caveat") and
               not x.startswith("Caveat: under the profiler the traced work takes")]
        assert odd == [] and "Traceback" not in out, odd
        assert peak < need / 1e9                 # the estimate the refusal rests on is an upper bound
    # With less memory than that: a clear refusal, within seconds, instead of the OOM killer. Under
    # 2.9 GB it is refused before reading; under the 3.9 GB estimate, after counting the events.
    for budget, phrase in (("2.5G", "needs at least"), ("3.4G", f"({info['events']:,} events) needs about")):
        code, secs, peak, out = _peak_memory_of(cli, {**env, "TRACETRIAGE_MEMORY_BUDGET": budget})
        print(f"budget {budget}: refused in {secs:.1f} s, peak {peak:.2f} GB: {out.strip()}")
        assert code == 2 and out.startswith("error: ") and "too big to analyse here" in out and phrase in out, out
        assert secs < 15 and peak < 3.0


# --- the command line ---------------------------------------------------------------------------------------

def test_capture_options_after_the_preset_name_are_not_ignored():
    from tracetriage.cli import _options_after_workload

    a = build_parser().parse_args(["capture", "chain-eager-small", "--out", "/tmp/x.json.gz", "--device", "cpu",
                                   "--steps", "3"])
    _options_after_workload(a)
    assert (a.out, a.device, a.steps, a.args) == ("/tmp/x.json.gz", "cpu", 3, [])
    a = build_parser().parse_args(["capture", "--out", "y.json.gz", "script", "train.py", "--out", "z"])
    _options_after_workload(a)
    assert a.out == "y.json.gz" and a.args == ["train.py", "--out", "z"]   # a script's own arguments


def test_the_real_command_prints_one_error_line_and_no_traceback(tmp_path):
    path = kf.write(tmp_path / "cut.json.gz", gzip.compress(json.dumps(good_doc()).encode())[:300])
    r = subprocess.run([sys.executable, "-m", "tracetriage.cli", "report", str(path)], capture_output=True, text=True,
                       cwd=ROOT, timeout=120, env={**os.environ, "TRACETRIAGE_NO_CACHE": "1"})
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def _with_a_cut_character(doc: dict) -> bytes:
    """The document with a python_function event whose name ends in the first byte of a two-byte UTF-8 character
    (0xd0 without its continuation byte), as torch.profiler writes a frame name it cut: the text is not UTF-8."""
    doc = copy.deepcopy(doc)
    first = doc["traceEvents"][0]
    doc["traceEvents"].append({"ph": "X", "cat": "python_function", "name": "CUT_NAME", "pid": first["pid"],
                               "tid": first["tid"], "ts": first["ts"], "dur": 1})
    text = json.dumps(doc).encode().replace(b"CUT_NAME", b"torch/utils/_config_module.py(0): \xd0")
    with pytest.raises(UnicodeDecodeError):
        text.decode("utf-8")
    return text


def test_a_frame_name_cut_inside_a_character_is_read_with_that_byte_replaced(tmp_path, capsys):
    doc = good_doc()
    text = _with_a_cut_character(doc)
    whole = kf.write(tmp_path / "cut.json", text)
    trace = load(whole, use_cache=False)
    assert any(name.endswith(": \ufffd") for name in trace.names)
    # every event is kept: the numbers are the valid twin's (the twin holds the same event under a valid name)
    twin = json.loads(text.replace(b"\xd0", b"?"))
    assert numbers(whole) == numbers(kf.write(tmp_path / "twin.json", twin))
    code, out, err = report(capsys, kf.write(tmp_path / "cut.json.gz", text, gz=True))
    assert code == 0 and out.startswith("Measured: ") and err == ""


def test_a_file_of_other_bytes_than_json_still_says_not_valid_json(tmp_path, capsys):
    # the replacement is for a trace whose only fault is a byte that is not UTF-8, not for any binary file
    assert_user_error(capsys, kf.write(tmp_path / "junk.json", b"\xd0\x00\xff" * 100), "not valid JSON")
