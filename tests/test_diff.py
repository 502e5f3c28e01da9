"""`tracetriage diff`: a change explained in time, launches, bytes and idle, on the real H200 traces."""
import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

import cli_in_process
from tracetriage.analyzers.model.trace import TraceError
from tracetriage.analyzers.output import serialize
from tracetriage.analyzers.triage.diff import diff_files as typed_diff


def diff_files(before, after) -> dict:
    """The `diff --json` object: what these tests pin."""
    return serialize.diff(typed_diff(before, after))


ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "traces"


def _trace(name: str) -> Path:
    return TRACES / f"{name}.json.gz"


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "tracetriage.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


@pytest.fixture(scope="module")
def chain_large():
    return diff_files(_trace("chain-eager-large"), _trace("chain-triton-large"))


@pytest.fixture(scope="module")
def chain_small():
    return diff_files(_trace("chain-eager-small"), _trace("chain-triton-small"))


@pytest.fixture(scope="module")
def gpt_graphs():
    return diff_files(_trace("gpt-compile"), _trace("gpt-graphs"))


# --- eager vs fused chain at 64M elements: the speedup is the byte ratio -------------------

def test_fused_chain_at_64m_is_explained_by_bytes(chain_large):
    d = chain_large
    assert d["speedup"] == pytest.approx(4.44, abs=0.05)
    assert d["byte_ratio"] == pytest.approx(4.5, rel=0.01)      # 36 vs 8 bytes per element: 9 vs 2 passes
    assert abs(d["speedup"] / d["byte_ratio"] - 1) < 0.02
    assert d["before"]["regime"] == d["after"]["regime"] == "memory"
    assert d["explained_by"] == "bytes"
    assert d["lines"][3].startswith("Explained by bytes: it moves 22% of the bytes and the 4.44× speedup")


def test_eager_chain_bytes_from_the_roofline_agree_with_the_capture(chain_large):
    # 200 calls x 64M fp32 elements x 36 bytes: the roofline costs every eager kernel from its op's shapes.
    b = chain_large["before"]
    assert b["bytes_source"] == "roofline" and b["byte_coverage"] == 1.0
    assert b["bytes"] == pytest.approx(200 * 67108864 * 36, rel=1e-6)


def test_fused_kernel_with_no_costed_op_takes_its_bytes_from_the_sidecar_and_says_so(chain_large):
    a = chain_large["after"]
    assert a["byte_coverage"] == 0.0 and a["roofline_bytes"] == 0.0
    assert a["bytes_source"] == "sidecar" and a["bytes"] == pytest.approx(200 * 67108864 * 8)
    assert "bytes declared by the capture sidecar" in chain_large["lines"][2]


def test_time_saved_splits_into_kernel_time_and_idle_by_cause(chain_large):
    d = chain_large
    saved = d["time_saved_us"]
    assert saved == pytest.approx(d["before"]["span_us"] - d["after"]["span_us"], abs=0.01)
    assert -saved == pytest.approx(d["busy_change_us"] + sum(d["idle_change_us"].values()), abs=0.05)
    assert d["launch_ratio"] == pytest.approx(4.0) and d["kernel_ratio"] == pytest.approx(4.0)


# --- eager vs fused chain at 4K elements: launches, not bytes -------------------------------

def test_fused_chain_at_4k_is_explained_by_launches_not_bytes(chain_small):
    d = chain_small
    assert d["before"]["regime"] == d["after"]["regime"] == "overhead"
    assert d["speedup"] == pytest.approx(1.73, abs=0.05)
    assert d["byte_ratio"] == pytest.approx(4.5, rel=0.01)       # the same 4.5x fewer bytes ...
    assert abs(d["speedup"] / d["byte_ratio"] - 1) > 0.5          # ... that do not explain the speedup
    assert d["explained_by"] == "launches"
    assert d["launch_ratio"] == pytest.approx(4.0)
    line = d["lines"][3]
    assert line.startswith("Explained by launches: both are overhead-bound")
    assert "hence 1.73× and not 4.00×" in line and "bytes are no lever here" in line


# --- compiled vs CUDA graphs: the launch-overhead idle shrinks -------------------------------

def test_cuda_graphs_shrink_the_launch_overhead_idle(gpt_graphs):
    d = gpt_graphs
    assert d["speedup"] == pytest.approx(3.92, abs=0.05)
    lo = d["idle_change_us"]["launch_overhead"]
    assert lo < -250_000                                          # -288.8 ms
    assert -lo / d["time_saved_us"] > 0.9                         # most of the time saved
    assert d["explained_by"] == "launch_overhead"
    assert d["after"]["graph_launches"] == 64 and d["launch_ratio"] > 8
    assert d["kernel_ratio"] == pytest.approx(1.0, abs=0.02)      # the same kernels, replayed
    assert d["lines"][3].startswith(
        "Explained by launch overhead: its idle shrank by 288.9 ms, 96% of the 299.4 ms saved")


def test_bytes_are_not_compared_when_graph_replays_hide_the_shapes(gpt_graphs):
    assert gpt_graphs["after"]["byte_coverage"] < 0.5
    assert gpt_graphs["byte_ratio"] is None
    assert ("bytes not comparable: only 30% of gpt-graphs.json.gz's kernel time has a costed op"
            in gpt_graphs["lines"][2])


def test_every_line_is_a_sentence_with_a_number(chain_large, chain_small, gpt_graphs):
    for d in (chain_large, chain_small, gpt_graphs):
        assert 3 <= len(d["lines"]) <= 5
        for line in d["lines"]:
            assert line.endswith(".") and any(ch.isdigit() for ch in line), line


def test_a_trace_against_itself_is_unchanged():
    d = diff_files(_trace("chain-eager-small"), _trace("chain-eager-small"))
    assert d["speedup"] == 1.0 and d["explained_by"] == "unchanged"
    assert all(v == 0 for v in d["idle_change_us"].values())


# --- per profiled step, devices, errors ---------------------------------------------------------

ORIGIN_US = 5_000_000_000.0


def _step_trace(path: Path, steps: int, kernel_us: float, step_us: float, device: str = "NVIDIA H200") -> Path:
    """A Kineto trace of `steps` ProfilerStep ranges, each launching one kernel of kernel_us."""
    ev = []
    for i in range(steps):
        t = ORIGIN_US + i * step_us
        corr, ext = 100 + i, 500 + i
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1,
                   "ts": t, "dur": step_us - 1.0, "args": {}})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": t + 1.0, "dur": 6.0,
                   "args": {"External id": ext}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 2.0,
                   "dur": 4.0, "args": {"External id": ext, "correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel", "name": "relu_kernel", "pid": 0, "tid": 7, "ts": t + 8.0,
                   "dur": kernel_us, "args": {"device": 0, "stream": 7, "correlation": corr}})
    doc = {"traceEvents": ev, "deviceProperties": [{"id": 0, "name": device}]}
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    return path


def test_different_step_counts_are_compared_per_step(tmp_path):
    # The same work per step, profiled for 2 steps and for 4: per step nothing changed,
    # though the after trace's span is twice as long.
    before = _step_trace(tmp_path / "two.json.gz", steps=2, kernel_us=1000.0, step_us=1010.0)
    after = _step_trace(tmp_path / "four.json.gz", steps=4, kernel_us=1000.0, step_us=1010.0)
    d = diff_files(before, after)
    assert d["steps"] == {"before": 2, "after": 4} and d["per_step"] is True
    assert d["after"]["span_us"] > 1.9 * d["before"]["span_us"]
    assert d["speedup"] == pytest.approx(1.0, abs=0.01)
    assert d["launch_ratio"] == pytest.approx(1.0)
    assert d["explained_by"] == "unchanged"
    assert "the profiled step went from 1.01 ms to 1.01 ms (the mean of 2 → 4 steps; the whole GPU spans" \
        in d["lines"][0]


def test_traces_from_different_devices_are_compared_with_a_caveat(tmp_path):
    before = _step_trace(tmp_path / "h200.json.gz", steps=2, kernel_us=1000.0, step_us=1010.0)
    after = _step_trace(tmp_path / "a100.json.gz", steps=2, kernel_us=500.0, step_us=510.0,
                        device="NVIDIA A100-SXM4-80GB")
    d = diff_files(before, after)
    assert d["speedup"] == pytest.approx(2010 / 1010, rel=0.01)
    assert d["lines"][-1].startswith("Caveat: the traces come from different devices (NVIDIA H200 vs NVIDIA A100")
    assert len(d["lines"]) <= 5


def test_a_bad_trace_raises_trace_error(tmp_path):
    bad = tmp_path / "notes.json"
    bad.write_text("not a trace\n")
    with pytest.raises(TraceError, match="not valid JSON"):
        diff_files(bad, _trace("chain-eager-small"))
    with pytest.raises(TraceError, match="no such file"):
        diff_files(_trace("chain-eager-small"), tmp_path / "missing.json.gz")


# --- the command line ----------------------------------------------------------------------------

def test_cli_diff_json_prints_one_object():
    r = _cli("diff", str(_trace("chain-eager-large")), str(_trace("chain-triton-large")), "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)                   # one object and nothing else
    assert obj["explained_by"] == "bytes"
    for key in ("before", "after", "speedup", "byte_ratio", "launch_ratio", "idle_change_us", "lines"):
        assert key in obj
    assert set(obj["idle_change_us"]) == {"launch_overhead", "host_work", "synchronization", "data_transfer", "other"}


def test_cli_diff_text_prints_the_lines():
    r = cli_in_process.run("diff", str(_trace("chain-eager-small")), str(_trace("chain-triton-small")))
    assert r.returncode == 0, r.stderr
    out = r.stdout.strip().splitlines()
    assert out[0].startswith("Diff: chain-eager-small.json.gz → chain-triton-small.json.gz on NVIDIA H200")
    assert out[3].startswith("Explained by launches")


def test_cli_diff_missing_file_exits_2_with_one_error_line():
    r = _cli("diff", "/no/such/before.json.gz", str(_trace("chain-eager-small")))
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.startswith("error: no such file") and r.stderr.count("\n") == 1
    assert "Traceback" not in r.stderr


def test_cli_diff_never_imports_torch():
    code = ("import sys; from tracetriage.cli import main; "
            f"rc = main(['diff', {str(_trace('gpt-compile'))!r}, {str(_trace('gpt-graphs'))!r}]); "
            "bad = [m for m in ('torch', 'triton', 'streamlit', 'pandas') if m in sys.modules]; "
            "print('IMPORTED', bad); sys.exit(rc)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "IMPORTED []" in r.stdout
