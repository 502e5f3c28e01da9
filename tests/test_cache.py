"""The trace cache never loses an answer and never trusts a bad entry.

- several processes loading one trace at once all get the no-cache answer and leave one valid entry;
  readers racing writers never see half an entry;
- a writer that dies mid-write leaves the cache usable (its temporary file is ignored, later removed);
- a truncated, bit-flipped, foreign or garbage entry is detected, removed and rebuilt;
- an entry for a file that has changed since (same size, different bytes) is not used.
"""
from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import pytest

import kineto_factory as kf
from tracetriage.analyzers.loading import cache, cache_key
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.trace import EVENT_COLUMNS

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "traces"


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("TRACETRIAGE_CACHE_DIR", str(d))
    monkeypatch.delenv("TRACETRIAGE_NO_CACHE", raising=False)
    return d / "traces"


@pytest.fixture
def src(tmp_path) -> Path:
    p = tmp_path / "gpt-graphs.json.gz"
    shutil.copy(TRACES / "gpt-graphs.json.gz", p)
    return p


def fingerprint(t) -> str:
    """Everything a loaded Trace holds, hashed."""
    h = hashlib.sha256()
    for k in EVENT_COLUMNS:
        a = getattr(t.ev, k)
        h.update(f"{k}:{a.dtype}".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    h.update(np.ascontiguousarray(t.launch_of).tobytes())
    h.update(np.ascontiguousarray(t.op_of).tobytes())
    h.update(json.dumps([t.names, [[b.hex() for b in s] for s in t.shapes_raw],
                         [list(vars(c).values()) for c in t.caveats], sorted(t.device_names.items()), t.rank,
                         t.base_time_ns, t.events_in_file]).encode())
    return h.hexdigest()


def entries(d: Path) -> list[Path]:
    return sorted(d.glob("*.parquet")) if d.exists() else []


def temporaries(d: Path) -> list[Path]:
    return sorted(d.glob(".*.tmp")) if d.exists() else []


def wait_for_writers(d: Path, timeout: float = 60) -> None:
    """Background writers (forked by load) are done: an entry exists and no temporary file, twice in a row."""
    deadline, calm = time.monotonic() + timeout, 0
    while time.monotonic() < deadline:
        calm = calm + 1 if entries(d) and not temporaries(d) else 0
        if calm >= 3:
            return
        time.sleep(0.1)
    raise AssertionError(f"cache writers did not finish: {list(d.iterdir()) if d.exists() else 'no dir'}")


# --- in worker processes (spawned: they import this module afresh) ------------------------------------

def _load_at_once(cache_root: str, path: str, barrier, out) -> None:
    os.environ["TRACETRIAGE_CACHE_DIR"] = cache_root
    os.environ.pop("TRACETRIAGE_NO_CACHE", None)
    barrier.wait()
    out.put(fingerprint(load(path)))


WRITES_PER_WRITER = 12    # bounded by count, never by time: a loaded 2-core machine does as many as an idle one
MIN_READS = 12
MAX_READS = 100_000


def _hammer(cache_root: str, path: str, role: str, barrier, writers_left, out) -> None:
    """Writers put the entry WRITES_PER_WRITER times; readers get it until every writer is done (at least
    MIN_READS times), and count what they saw."""
    os.environ["TRACETRIAGE_CACHE_DIR"] = cache_root
    os.environ.pop("TRACETRIAGE_NO_CACHE", None)
    p = Path(path)
    ref = load(p, use_cache=False)
    want = fingerprint(ref)
    barrier.wait()
    seen = {"ok": 0, "none": 0, "wrong": 0}
    if role == "writer":
        for _ in range(WRITES_PER_WRITER):
            cache.put(p, ref)
            seen["ok"] += 1
        with writers_left.get_lock():
            writers_left.value -= 1
    else:
        reads = 0
        while reads < MAX_READS and (reads < MIN_READS or writers_left.value > 0):
            t = cache.get(p)
            seen["none" if t is None else ("ok" if fingerprint(t) == want else "wrong")] += 1
            reads += 1
    out.put((role, seen))


def _die_in_fsync(cache_root: str, path: str, ready) -> None:
    """A cache writer killed mid-write: it has written its temporary file and hangs before the rename."""
    os.environ["TRACETRIAGE_CACHE_DIR"] = cache_root
    p = Path(path)
    trace = load(p, use_cache=False)

    def hang(fd):
        ready.set()
        time.sleep(600)

    os.fsync = hang
    cache.put(p, trace)


# --- concurrency ----------------------------------------------------------------------------------------

@pytest.mark.slow      # processes racing on one entry
def test_processes_loading_one_trace_at_once_get_one_answer_and_leave_one_valid_entry(src, cache_dir):
    want = fingerprint(load(src, use_cache=False))
    ctx = mp.get_context("spawn")
    n = 6
    barrier, out = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_load_at_once, args=(str(cache_dir.parent), str(src), barrier, out)) for _ in range(n)]
    for p in procs:
        p.start()
    got = [out.get(timeout=120) for _ in range(n)]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert got == [want] * n
    wait_for_writers(cache_dir)
    assert len(entries(cache_dir)) == 1 and temporaries(cache_dir) == []
    hit = cache.get(src)
    assert hit is not None and fingerprint(hit) == want
    assert fingerprint(load(src)) == want        # and the next load, from the cache, agrees


@pytest.mark.slow      # processes racing on one entry
def test_readers_racing_writers_never_see_half_an_entry(src, cache_dir):
    ref = load(src, use_cache=False)
    cache.put(src, ref)
    ctx = mp.get_context("spawn")
    roles = ["writer", "writer", "reader", "reader", "reader"]
    barrier, out = ctx.Barrier(len(roles)), ctx.Queue()
    writers_left = ctx.Value("i", roles.count("writer"))
    procs = [ctx.Process(target=_hammer, args=(str(cache_dir.parent), str(src), r, barrier, writers_left, out))
             for r in roles]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in roles]
    for p in procs:
        p.join(60)
    writes = sum(s["ok"] for r, s in results if r == "writer")
    reads = [s for r, s in results if r == "reader"]
    assert writes == 2 * WRITES_PER_WRITER and all(sum(s.values()) >= MIN_READS for s in reads)
    assert all(s["none"] == 0 and s["wrong"] == 0 for s in reads), reads   # always a whole entry, never a miss
    assert len(entries(cache_dir)) == 1 and temporaries(cache_dir) == []


# --- crashes mid-write ---------------------------------------------------------------------------------------

def test_a_writer_killed_mid_write_leaves_the_old_entry_and_the_cache_usable(src, cache_dir):
    want = fingerprint(load(src, use_cache=False))
    cache.put(src, load(src, use_cache=False))
    (entry,) = entries(cache_dir)
    before = entry.read_bytes()
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    p = ctx.Process(target=_die_in_fsync, args=(str(cache_dir.parent), str(src), ready))
    p.start()
    assert ready.wait(120)
    os.kill(p.pid, signal.SIGKILL)
    p.join(30)
    assert len(temporaries(cache_dir)) == 1           # its whole temporary file, never renamed
    assert entry.read_bytes() == before               # the entry it would have replaced is untouched
    assert fingerprint(cache.get(src)) == want
    entry.unlink()                                    # and with no entry at all, only the temporary file:
    assert cache.get(src) is None
    assert fingerprint(load(src)) == want
    wait_for_writers_or_tmp(cache_dir)
    assert fingerprint(cache.get(src)) == want


def wait_for_writers_or_tmp(d: Path, timeout: float = 60) -> None:
    """Like wait_for_writers, but a stale temporary file from a dead writer may stay."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if entries(d) and all(time.time() - t.stat().st_mtime > 0.5 for t in temporaries(d)):
            time.sleep(0.3)
            return
        time.sleep(0.1)
    raise AssertionError("no cache entry appeared")


def test_a_half_written_temporary_file_is_ignored_and_old_ones_are_swept(src, cache_dir):
    want = fingerprint(load(src, use_cache=False))
    cache.put(src, load(src, use_cache=False))
    (entry,) = entries(cache_dir)
    half = entry.read_bytes()[: entry.stat().st_size // 2]
    entry.unlink()
    fresh = cache_dir / f".{entry.name}.a1b2c3.tmp"
    stale = cache_dir / f".{entry.name}.d4e5f6.tmp"
    fresh.write_bytes(half)
    stale.write_bytes(half)
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))
    assert cache.get(src) is None                       # the temporary file is not an entry
    assert fingerprint(load(src)) == want
    wait_for_writers_or_tmp(cache_dir)
    assert fingerprint(cache.get(src)) == want
    assert fresh.exists() and not stale.exists()        # a live writer's file is left alone; a dead one's swept


# --- corrupt entries -------------------------------------------------------------------------------------------

CORRUPTIONS = {
    "empty": lambda b: b"",
    "truncated-half": lambda b: b[: len(b) // 2],
    "one-byte-short": lambda b: b[:-1],
    "no-trailer": lambda b: b[:-8],                        # what FORMAT 3 wrote: bare Parquet
    "flipped-in-data": lambda b: _flip(b, len(b) // 3),
    "flipped-in-footer-metadata": lambda b: _flip(b, b.rindex(b"aten::") + 2),   # a name inside the footer JSON
    "flipped-crc": lambda b: _flip(b, len(b) - 6),
    "garbage": lambda b: os.urandom(len(b)),
    "json": lambda b: b'{"traceEvents": []}',
}


def _flip(b: bytes, i: int) -> bytes:
    x = bytearray(b)
    x[i] ^= 0x20
    return bytes(x)


@pytest.mark.parametrize("how", list(CORRUPTIONS))
def test_a_corrupt_entry_is_detected_removed_and_rebuilt(src, cache_dir, how):
    want = fingerprint(load(src, use_cache=False))
    cache.put(src, load(src, use_cache=False))
    (entry,) = entries(cache_dir)
    good = entry.read_bytes()
    entry.write_bytes(CORRUPTIONS[how](good))
    assert cache.get(src) is None and not entry.exists()   # detected and removed, never returned
    entry.write_bytes(CORRUPTIONS[how](good))
    assert fingerprint(load(src)) == want                  # load() rebuilds it...
    wait_for_writers(cache_dir)
    assert fingerprint(cache.get(src)) == want             # ...and the new entry is good


def test_every_single_byte_flip_of_an_entry_is_caught(tmp_path, cache_dir):
    path = kf.write(tmp_path / "small.json", kf.document(kf.events_for(kf.chain(30))))
    ref = load(path, use_cache=False)
    want = fingerprint(ref)
    cache.put(path, ref)
    entry = cache.entry_path(path)
    good = entry.read_bytes()
    for i in range(0, len(good), max(1, len(good) // 400)):
        entry.write_bytes(_flip(good, i))
        t = cache.get(path)
        assert t is None or fingerprint(t) == want, f"byte {i} of {len(good)}"
        assert t is None and not entry.exists(), f"byte {i}: a flip went unnoticed"


def test_an_entry_of_another_trace_under_this_name_is_not_trusted(src, cache_dir, tmp_path):
    other = kf.write(tmp_path / "other.json", kf.document(kf.events_for(kf.chain(30))))
    os.utime(other, ns=(src.stat().st_atime_ns, src.stat().st_mtime_ns))
    cache.put(other, load(other, use_cache=False))
    entry = cache.entry_path(src)
    entry.parent.mkdir(parents=True, exist_ok=True)
    os.replace(cache.entry_path(other), entry)            # a whole, valid entry, for the wrong file
    assert cache.get(src) is None and not entry.exists()
    assert fingerprint(load(src)) == fingerprint(load(src, use_cache=False))


def test_a_cache_that_cannot_be_written_does_not_fail_the_load(src, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv("TRACETRIAGE_CACHE_DIR", str(blocker))
    monkeypatch.delenv("TRACETRIAGE_NO_CACHE", raising=False)
    want = fingerprint(load(src, use_cache=False))
    cache.put(src, load(src, use_cache=False))
    assert fingerprint(load(src)) == want and cache.get(src) is None


def test_a_cache_write_imports_no_pandas(src, cache_dir):
    """The entry is written in a child forked from each command that loads a trace afresh: pyarrow's `pa.array`
    imported pandas there (~0.3 CPU-s a write) to ask whether a column was a pandas object."""
    import subprocess
    import sys

    code = ("import sys; from pathlib import Path; from tracetriage.analyzers.loading import cache; "
            "from tracetriage.analyzers.loading.load import load; p = Path(sys.argv[1]); "
            "cache.put(p, load(p, use_cache=False)); print('pandas' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code, str(src)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False"]
    assert len(entries(cache_dir)) == 1 and fingerprint(cache.get(src)) == fingerprint(load(src, use_cache=False))


# --- changed sources -------------------------------------------------------------------------------------------

def _busy_us(trace) -> float:
    k = trace.ev.cat == 6
    return float((trace.ev.end[k] - trace.ev.start[k]).sum()) / 1e3


@pytest.mark.parametrize("mtime", ["restored", "touched"])
def test_an_entry_for_a_file_changed_since_is_not_used(tmp_path, cache_dir, mtime):
    path = kf.write(tmp_path / "t.json", kf.document(kf.events_for(kf.chain(20))))
    before = load(path, use_cache=False)
    cache.put(path, before)
    st = path.stat()
    text = path.read_text()
    assert '"dur": 10.0' in text
    path.write_text(text.replace('"dur": 10.0', '"dur": 20.0', 1))   # one kernel 10 µs longer, same size
    assert path.stat().st_size == st.st_size
    if mtime == "restored":
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = load(path)
    assert _busy_us(after) == pytest.approx(_busy_us(before) + 10)
    assert fingerprint(after) == fingerprint(load(path, use_cache=False))


@pytest.mark.slow      # a big file
def test_a_big_file_changed_outside_its_sampled_digest_is_caught_by_its_mtime(tmp_path, cache_dir):
    # above 64 MiB the entry's name hashes 32 samples of the file, not all of it: the recorded size and
    # mtime catch an edit between the samples
    events = kf.events_for(kf.chain(1000))
    pad = "x" * ((70 << 20) // len(events))
    doc = kf.document([{**e, "args": {**e.get("args", {}), "padding": pad}} for e in events])
    path = kf.write(tmp_path / "big.json", doc)
    before = load(path, use_cache=False)
    cache.put(path, before)
    data = bytearray(path.read_bytes())
    size = len(data)
    assert size > cache_key.FULL_HASH_LIMIT
    step = (size - cache_key.SAMPLE) // (cache_key.SAMPLES - 1)
    sampled = lambda i: any(k * step <= i < k * step + cache_key.SAMPLE for k in range(cache_key.SAMPLES))
    at = next(i for i in range(size) if data.startswith(b'"dur": 10.0', i) and not sampled(i)
              and not sampled(i + 11))
    data[at:at + 11] = b'"dur": 20.0'
    digest = cache_key.digest(path, size)
    path.write_bytes(bytes(data))
    os.utime(path, ns=(time.time_ns(), time.time_ns()))
    assert cache_key.digest(path, size) == digest          # the same entry name...
    assert cache.get(path) is None                      # ...but stale
    assert _busy_us(load(path)) == pytest.approx(_busy_us(before) + 10)
