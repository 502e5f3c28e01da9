"""loading.read's read-ahead: `report` gunzips its trace in a thread while the analysis imports; what the
thread read (or raised) is exactly what a read in the main thread gives, and no thread of it outlives its use."""
import gzip
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kineto_factory import chain, document, events_for, write
from tracetriage.analyzers.loading import read
from tracetriage.analyzers.loading.load import load, parse_text
from tracetriage.analyzers.model.trace import TraceError

ROOT = Path(__file__).resolve().parents[1]


def _threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "tracetriage read-ahead"]


@pytest.fixture
def trace_gz(tmp_path) -> Path:
    return write(tmp_path / "t.json.gz", document(events_for(chain(200))))


def test_read_bytes_after_a_read_ahead_is_the_text_a_plain_read_gives(trace_gz):
    plain = read.read_bytes(trace_gz)
    read.read_ahead(trace_gz)
    assert read._ahead is not None
    ahead = read.read_bytes(trace_gz)
    assert read._ahead is None          # the thread's text was taken, not read again
    assert ahead == plain == bytearray(gzip.decompress(trace_gz.read_bytes()))
    assert _threads() == []


def test_the_switch_interval_is_narrowed_while_the_read_ahead_runs_and_set_back_when_its_text_is_taken(trace_gz):
    before = sys.getswitchinterval()
    read.read_ahead(trace_gz)
    assert sys.getswitchinterval() == pytest.approx(min(before, read.READ_AHEAD_SWITCH_S))
    read.read_bytes(trace_gz)
    assert sys.getswitchinterval() == before


def test_a_read_ahead_forgotten_sets_the_switch_interval_back(trace_gz):
    before = sys.getswitchinterval()
    read.read_ahead(trace_gz)
    read.read_ahead(trace_gz)            # (a second read-ahead forgets the first: narrowed once, not twice)
    read.forget_read_ahead()
    assert sys.getswitchinterval() == before and _threads() == []


def test_what_the_thread_raised_is_raised_where_the_read_would_have_been(tmp_path):
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(gzip.compress(b'{"traceEvents": [{"ph": "X"}]}')[:-12])   # the gzip trailer cut off
    with pytest.raises(TraceError) as plain:
        read.read_bytes(bad)
    read.read_ahead(bad)
    with pytest.raises(TraceError) as ahead:
        read.read_bytes(bad)
    assert str(ahead.value) == str(plain.value) and "ends early" in str(ahead.value)


def test_a_file_changed_after_the_read_ahead_began_is_read_again(tmp_path, trace_gz):
    read.read_ahead(trace_gz)
    for t in _threads():
        t.join()
    write(trace_gz, document(events_for(chain(5))))
    assert read.read_bytes(trace_gz) == bytearray(gzip.decompress(trace_gz.read_bytes()))


def test_a_read_of_another_file_stops_the_read_ahead_before_it_reads(tmp_path, trace_gz):
    other = write(tmp_path / "other.json.gz", document(events_for(chain(3))))
    read.read_ahead(trace_gz)
    assert read.read_bytes(other) == bytearray(gzip.decompress(other.read_bytes()))
    assert _threads() == [] and read._ahead is None     # (decode forks next: no thread of ours may run on)


def test_a_trace_the_cache_holds_is_not_read_ahead(tmp_path, trace_gz, monkeypatch):
    monkeypatch.setenv("TRACETRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TRACETRIAGE_NO_CACHE", raising=False)
    from tracetriage.analyzers.loading import cache

    cache.put(trace_gz, load(trace_gz, use_cache=False))
    read.read_ahead(trace_gz)
    ahead = read._ahead
    assert ahead is not None
    ahead.thread.join()
    assert ahead.text is None and ahead.error is None      # the JSON nobody needs, not read
    assert len(load(trace_gz).ev) > 0
    assert _threads() == [] and read._ahead is None


def test_a_cache_entry_that_proves_bad_reads_the_file_after_all(tmp_path, trace_gz, monkeypatch):
    monkeypatch.setenv("TRACETRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TRACETRIAGE_NO_CACHE", raising=False)
    from tracetriage.analyzers.loading import cache, cache_key

    want = load(trace_gz, use_cache=False)
    cache.put(trace_gz, want)
    cache_key.entry_path(trace_gz).write_bytes(b"not parquet")
    read.read_ahead(trace_gz)
    got = load(trace_gz)
    assert len(got.ev) == len(want.ev) and (got.ev.start == want.ev.start).all()
    assert _threads() == [] and read._ahead is None


def test_nothing_is_read_ahead_for_what_is_no_regular_file(tmp_path):
    read.read_ahead(tmp_path)
    read.read_ahead(tmp_path / "missing.json.gz")
    assert read._ahead is None and _threads() == []


def test_the_reading_module_imports_no_numpy_so_the_thread_starts_before_numpy_does():
    code = "import sys, tracetriage.analyzers.loading.read; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_report_starts_reading_its_trace_before_its_parser_is_built(trace_gz):
    from tracetriage import cli

    cli._read_ahead_for(["report", "--json", str(trace_gz), "--format", "json"])
    assert read._ahead is not None and read._ahead.path == trace_gz
    assert read._ahead.parse is cli._parse_ahead       # (its parse too, where the stream scans the text)
    assert read.read_bytes(trace_gz) == bytearray(gzip.decompress(trace_gz.read_bytes()))
    assert _threads() == [] and read._ahead is None


def test_only_a_report_of_one_file_it_can_read_the_options_of_is_read_ahead(trace_gz):
    from tracetriage import cli

    for argv in (["whatif", str(trace_gz)], ["report"], ["report", str(trace_gz), "--scheduler", "local"],
                 ["report", str(trace_gz), "--fail-if-idle-above"]):
        cli._read_ahead_for(argv)
        assert read._ahead is None and _threads() == [], argv


def test_a_report_whose_command_line_fails_leaves_no_thread_reading(trace_gz, capsys):
    from tracetriage import cli

    with pytest.raises(SystemExit) as ended:
        cli.main(["report", str(trace_gz), "--no-such-option"])
    assert ended.value.code == cli.EXIT_USER_ERROR and "--no-such-option" in capsys.readouterr().err
    assert read._ahead is None and _threads() == []


def _same_trace(a, b) -> None:
    import numpy as np

    assert (a.names, a.shapes_raw, a.events_in_file, a.caveats, a.device_names) == (
        b.names, b.shapes_raw, b.events_in_file, b.caveats, b.device_names)
    for k in a.ev.__dataclass_fields__:
        x, y = getattr(a.ev, k), getattr(b.ev, k)
        assert x.dtype == y.dtype and np.array_equal(x, y), k


@pytest.fixture
def streamed_small(monkeypatch):
    from tracetriage.analyzers.loading import streamed

    if not streamed.enabled():
        pytest.skip("the native scan is not built")
    monkeypatch.setattr(streamed, "MIN_BYTES", 0)        # (a small trace scanned as it arrives, as a large one is)
    monkeypatch.setenv("TRACETRIAGE_NO_CACHE", "1")      # (a trace the session's cache holds is not read ahead)


def test_a_trace_the_stream_scanned_is_parsed_in_the_read_ahead_thread_and_loads_as_the_main_thread_loads_it(
        streamed_small):
    # `report` parses its trace in the read-ahead thread while it imports its modules: decode, assemble and link
    # there, the same trace as the main thread's load
    path = ROOT / "traces" / "gpt-eager.json.gz"
    read.read_ahead(path, parse=parse_text)
    read._ahead.thread.join()
    assert read._ahead.parsed is not None and read._ahead.text is None      # (its text freed, not kept for a read)
    ahead = load(path, use_cache=False)
    assert read._ahead is None and _threads() == []
    _same_trace(ahead, load(path, use_cache=False))


def test_a_text_that_is_no_trace_says_so_from_the_thread_in_the_words_the_main_thread_says_it(tmp_path,
                                                                                             streamed_small):
    empty = tmp_path / "empty.json.gz"
    empty.write_bytes(gzip.compress(b'{"traceEvents": []}'))
    with pytest.raises(TraceError) as plain:
        load(empty, use_cache=False)
    read.read_ahead(empty, parse=parse_text)
    read._ahead.thread.join()
    assert read._ahead.parse_error is not None
    with pytest.raises(TraceError) as ahead:
        load(empty, use_cache=False)
    assert str(ahead.value) == str(plain.value) and "has no events" in str(plain.value)
    assert read._ahead is None and _threads() == []


def test_a_text_the_stream_did_not_scan_is_not_parsed_in_the_thread(trace_gz):
    # (a small text is scanned after the read: its decode may be msgspec's, which forks; the main thread parses it)
    read.read_ahead(trace_gz, parse=parse_text)
    read._ahead.thread.join()
    assert read._ahead.parsed is None and read._ahead.text is not None
    load(trace_gz, use_cache=False)
    assert read._ahead is None and _threads() == []


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts the process's threads in /proc")
def test_report_imports_numpy_without_blas_threads_and_leaves_the_callers_setting_as_it_was():
    # OpenBLAS's worker threads spin waiting for matrix work the report never gives them, on the cores the read-ahead
    # needs; a child process (a `try` script's) still gets the caller's OPENBLAS_NUM_THREADS
    code = ("import os; from tracetriage import cli; cli._numpy_without_blas_threads(['report', 'x.json.gz']); "
            "print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'))")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split() == ["1", "None"]
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={**env, "OPENBLAS_NUM_THREADS": "3"})
    assert out.stdout.split() == ["1", "3"]
