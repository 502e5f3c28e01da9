"""`tracetriage annotate`: the trace written back with a track of idle gaps, for Perfetto UI."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.output import annotate
from tracetriage.analyzers.triage import timeline
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.cli import main

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "traces" / "smell-sync-item.json.gz"


def test_the_annotated_trace_is_chrome_trace_json_with_one_slice_per_gap(tmp_path):
    out = tmp_path / "a.json.gz"
    assert main(["annotate", str(TRACE), "-o", str(out)]) == 0
    doc = json.loads(gzip.decompress(out.read_bytes()))
    original = json.loads(gzip.decompress(TRACE.read_bytes()))
    added = doc["traceEvents"][len(original["traceEvents"]):]
    assert doc["traceEvents"][:len(original["traceEvents"])] == original["traceEvents"]
    a = analyze_file(TRACE)
    g = timeline.gaps(a)
    slices = [e for e in added if e["ph"] == "X"]
    assert len(slices) == len(g) == sum(len(d.gaps) for d in a.devices)
    pid = slices[0]["pid"]
    assert pid not in {e.get("pid") for e in original["traceEvents"]}
    meta = {(e["name"], e["tid"]): e["args"] for e in added if e["ph"] == "M"}
    assert meta[("process_name", 0)] == {"name": annotate.TRACK_PROCESS}
    assert meta[("thread_name", 0)] == {"name": "GPU 0 idle"}
    # ts and dur in µs of the trace's own clock: each slice sits exactly on its gap
    for e, s, t, c in zip(slices, g.start_ns, g.end_ns, g.cause):
        assert round(e["ts"] * 1000) == s and round(e["ts"] * 1000) + round(e["dur"] * 1000) == t   # as load() reads
        assert e["name"] == c == e["args"]["cause"]
    sync = next(e for e in slices if e["name"] == "synchronization")
    assert sync["args"]["host_call"] == "cudaStreamSynchronize" and sync["args"]["first_experiment"]


def test_the_annotated_trace_loads_back_and_analyses_the_same(tmp_path):
    out = tmp_path / "a.json"
    assert main(["annotate", str(TRACE), "-o", str(out)]) == 0
    back = load(out, use_cache=False)
    names = {back.names[i] for i in back.ev.name}
    assert {"synchronization", "launch_overhead"} <= names
    a, b = analyze_file(TRACE), analyze_file(out)
    assert (b.span_ns, b.idle_ns, b.by_cause_ns) == (a.span_ns, a.idle_ns, a.by_cause_ns)


def test_annotate_refuses_a_missing_trace_and_overwriting_its_input_in_one_line(tmp_path, capsys):
    assert main(["annotate", str(tmp_path / "nope.json"), "-o", str(tmp_path / "o.json.gz")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no such file") and err.count("\n") == 1
    assert main(["annotate", str(TRACE), "-o", str(TRACE)]) == 2
    assert "is the input trace" in capsys.readouterr().err


def test_annotate_and_dashboard_commands_never_import_streamlit_or_torch(tmp_path):
    code = ("import sys; from tracetriage.cli import main; "
            f"rc = main(['annotate', {str(TRACE)!r}, '-o', {str(tmp_path / 'o.json.gz')!r}]); "
            f"rc2 = main(['dashboard', {str(tmp_path / 'missing')!r}]); "
            "bad = [m for m in ('torch', 'triton', 'streamlit', 'pandas') if m in sys.modules]; "
            "print('IMPORTED', bad, rc, rc2)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert "IMPORTED [] 0 2" in r.stdout, r.stderr
    assert "error: no such file or directory:" in r.stderr
