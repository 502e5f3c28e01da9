"""tools.native_scan_probe: its figures are only worth quoting if every option it times reads the events msgspec's
decoder reads (the product's scan, in one thread and in two, against msgspec in one process and forked)."""
from pathlib import Path

import pytest

from tools import native_scan_probe
from tracetriage.analyzers.loading import decode, native

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(native.eventscan is None, reason="the native scan is not built (no C compiler)")


def test_every_option_the_probe_times_reads_the_events_msgspec_reads(monkeypatch):
    monkeypatch.setattr(decode, "PARALLEL_MIN_BYTES", 1 << 20)     # (so a small trace takes the two-way paths)
    r = native_scan_probe.measure(ROOT / "traces" / "chain-eager-small.json.gz", repeats=1)
    assert r["rows"] > 1000 and len(r["same"]) == 4
    assert [k for k, same in r["same"].items() if not same] == []


def test_with_the_scan_off_the_probe_says_so_in_one_error_line(monkeypatch, capsys):
    monkeypatch.setenv("TRACETRIAGE_NO_NATIVE", "1")
    assert native_scan_probe.main([str(ROOT / "traces" / "chain-eager-small.json.gz")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
