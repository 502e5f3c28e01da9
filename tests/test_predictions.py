"""The prediction log survives concurrent writers, a writer killed mid-transaction, and refuses a
corrupt file without touching it. Loops are bounded by count, never by time."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tracetriage.cli import main
from tracetriage.drills.predictions import Log, calibration

ROOT = Path(__file__).resolve().parent.parent
WRITERS, ROWS_EACH = 8, 25

WRITER = """
import sys
from tracetriage.drills.predictions import Log
log = Log(sys.argv[1])
for i in range({rows}):
    if i % 2:
        log.predict("span_ms", 1.0 + i, f"writer {{sys.argv[2]}} row {{i}}")
    else:
        log.record_attempt("M02.03-a", 0.5, {{"cause": "x"}}, [])
"""


@pytest.mark.slow      # eight processes racing
def test_eight_processes_writing_at_once_lose_nothing(tmp_path):
    db = tmp_path / "log.sqlite3"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER.format(rows=ROWS_EACH), str(db), str(k)], cwd=ROOT,
                              stderr=subprocess.PIPE) for k in range(WRITERS)]
    errs = [p.communicate(timeout=300)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errs
    log = Log(db)
    assert len(log.predictions()) == WRITERS * (ROWS_EACH // 2)
    assert len(log.attempts()) == WRITERS * (ROWS_EACH - ROWS_EACH // 2)
    assert log.con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


KILLED = """
import sys
from tracetriage.drills.predictions import Log
log = Log(sys.argv[1])
for i in range(5):
    log.predict("span_ms", 1.0 + i, "committed")
log.con.execute("BEGIN IMMEDIATE")
for i in range(100):
    log.con.execute("INSERT INTO predictions (created, quantity, predicted, why) VALUES ('t', 'span_ms', 1, 'lost')")
print("in transaction", flush=True)
sys.stdin.readline()   # wait here, mid-transaction, until killed
"""


def test_a_writer_killed_mid_transaction_leaves_every_committed_row(tmp_path):
    db = tmp_path / "log.sqlite3"
    p = subprocess.Popen([sys.executable, "-c", KILLED, str(db)], cwd=ROOT, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "in transaction"
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=60)
    log = Log(db)
    rows = log.predictions()
    assert [r["why"] for r in rows] == ["committed"] * 5
    assert log.con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    log.predict("span_ms", 2.0, "after the crash")   # and it still takes writes
    assert len(log.predictions()) == 6


@pytest.mark.parametrize("content, message", [
    (b"this is my thesis, not a database\n" * 50, "is not a tracetriage prediction log (not an SQLite database)"),
    (b"SQLite format 3\x00" + b"\xff" * 4000, "is damaged"),
])
def test_a_corrupt_log_is_refused_and_never_overwritten(tmp_path, capsys, content, message):
    db = tmp_path / "log.sqlite3"
    db.write_bytes(content)
    for argv in (["predictions", "--db", str(db)], ["predict", "span_ms", "3", "--why", "x", "--db", str(db)]):
        rc = main(argv)
        _, err = capsys.readouterr()
        assert rc == 2 and err.startswith("error: ") and message in err and err.count("\n") == 1, err
        assert "left unchanged" in err
    assert db.read_bytes() == content
    assert not Path(str(db) + "-wal").exists() or Path(str(db) + "-wal").stat().st_size == 0


def test_a_malformed_answer_file_records_no_attempt_even_with_a_corrupt_log(tmp_path, capsys):
    db = tmp_path / "log.sqlite3"
    db.write_bytes(b"not a database")
    f = tmp_path / "a.toml"
    f.write_text("cause = \n")
    rc = main(["drill", "grade", "M02.04-c", "--answers", str(f), "--db", str(db)])
    _, err = capsys.readouterr()
    assert rc == 2 and "line 1: not valid TOML" in err
    assert db.read_bytes() == b"not a database"


def test_calibration_is_the_median_ratio_and_the_share_within_2x():
    rows = [{"predicted": 10, "measured": 5}, {"predicted": 10, "measured": 30}, {"predicted": 10, "measured": 12},
            {"predicted": 10, "measured": None}]
    c = calibration(rows)
    assert (c.measured, c.median_ratio, c.within_2x) == (3, 1.2, pytest.approx(2 / 3, abs=1e-4))


def test_the_log_lives_in_the_user_data_directory_by_default(monkeypatch):
    import platformdirs

    from tracetriage.drills.predictions import default_path

    monkeypatch.delenv("TRACETRIAGE_DB", raising=False)
    assert default_path() == Path(platformdirs.user_data_dir("tracetriage")) / "log.sqlite3"


def test_a_prediction_of_what_a_lever_buys_is_measured_by_the_what_if_replay(tmp_path):
    from tracetriage.drills import predictions as pr

    trace = Path(__file__).resolve().parent.parent / "traces" / "fixes" / "item_python--before.json.gz"
    log = pr.Log(tmp_path / "log.db")
    pid = log.predict("remove_syncs_ratio", 0.8, "the .item() serialises 0.15 ms of Python per step", str(trace))
    assert pr.measure_pending(log) == []
    row = log.get(pid)
    assert row["measured"] == pytest.approx(0.696, abs=0.005) and row["measured_from"] == str(trace)


def test_calibration_names_the_worst_misses_by_their_factor_over_or_under():
    rows = [{"id": 1, "quantity": "span_ms", "predicted": 10, "measured": 12, "why": "close"},
            {"id": 2, "quantity": "span_ms", "predicted": 10, "measured": 1, "why": "ten times over"},
            {"id": 3, "quantity": "span_ms", "predicted": 10, "measured": 40, "why": "four times under"}]
    c = calibration(rows)
    assert [w["id"] for w in c.worst] == [2, 3]          # the 10× miss first; the close one is no miss
    assert [w["factor"] for w in c.worst] == [10.0, 4.0]


def test_a_prediction_off_by_the_unit_ladder_is_named_as_a_unit_slip():
    from tracetriage.drills.predictions import unit_slip

    assert unit_slip(19, 0.19, "") == 100
    assert unit_slip(17600, 17.6, "ms") == 1000
    assert unit_slip(20, 17.6, "ms") is None


def test_a_ratio_or_speedup_given_as_a_percent_is_a_slip_and_a_warned_slip_stays_out_of_the_calibration():
    from tracetriage.drills.predictions import SAVING_SLIP, calibration, unit_slip
    from tracetriage.drills.words import unit_slip_warning

    assert unit_slip(392, 3.92, "×") == 100                   # speedup 392 for 3.92
    assert unit_slip(78, 0.78, "") == 100                     # fuse_ratio 78 for 0.78
    assert unit_slip(78, 0.216, "") == SAVING_SLIP            # ... or for 78% less: a ratio of 0.22
    assert unit_slip(3, 3.92, "×") is None and unit_slip(0.3, 0.216, "") is None
    assert "did you mean 3.92?" in unit_slip_warning("speedup", 392, 3.92, "×", 100)
    assert "did you mean 0.22?" in unit_slip_warning("fuse_ratio", 78, 0.216, "", SAVING_SLIP)
    rows = [{"id": 1, "quantity": "speedup", "predicted": 392, "measured": 3.92, "why": "a percent"},
            {"id": 2, "quantity": "fuse_ratio", "predicted": 78, "measured": 0.216, "why": "the saving"},
            {"id": 3, "quantity": "speedup", "predicted": 3, "measured": 3.92, "why": "close"}]
    c = calibration(rows)
    assert c.measured == 1 and c.median_ratio == pytest.approx(3.92 / 3, rel=1e-3) and not c.worst
