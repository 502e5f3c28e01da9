"""The prediction log: predict before you measure, then see how far off you were.

    tracetriage predict span_ms 12 --why "four fewer launches per step" --trace after.json.gz
    tracetriage predictions          # measures what can be measured now, prints the calibration

One SQLite file in WAL mode (many writers, readers never blocked), at the platform's user data
directory unless --db or $TRACETRIAGE_DB names another. Every write is one short transaction, so a
process killed mid-write loses only its own uncommitted row. A file that is not an SQLite database,
or a damaged one, is refused with one line and never written to.

Quantities (measured by the analyzers, through tracetriage.drills.evidence; tracetriage.drills.quantities holds the
table):
"""
from __future__ import annotations

import json
import math
import os
import sqlite3
import statistics
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from tracetriage.drills import evidence
from tracetriage.drills import quantities as drills_quantities
from tracetriage.drills.quantities import QUANTITIES, lever_quantities  # noqa: F401  (re-exported: the log's quantities)

# The quantities (unit, valid range, meaning) live in one table, tracetriage.drills.quantities, which the command
# line reads for its help without importing this module's SQLite and statistics.
__doc__ += "\n".join(drills_quantities.table_lines()) + "\n"

HEADER = b"SQLite format 3\x00"
SCHEMA = """
CREATE TABLE IF NOT EXISTS predictions (
    id INTEGER PRIMARY KEY, created TEXT NOT NULL, quantity TEXT NOT NULL, predicted REAL NOT NULL,
    why TEXT NOT NULL, trace TEXT, baseline TEXT, measured REAL, measured_from TEXT, measured_at TEXT);
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY, created TEXT NOT NULL, drill TEXT NOT NULL, score REAL NOT NULL,
    answers TEXT NOT NULL, parts TEXT NOT NULL);
"""
LOCK_RETRIES = 200          # attempts at a locked database, each after the busy timeout
BUSY_TIMEOUT_MS = 10_000


class LogError(Exception):
    """The log cannot be used (not a database, damaged, unwritable): one line for the user."""


def default_path() -> Path:
    env = os.environ.get("TRACETRIAGE_DB")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_data_dir("tracetriage")) / "log.sqlite3"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Log:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else default_path()
        self._check_header()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.con = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            self.con.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            self._retry(lambda: self.con.execute("PRAGMA journal_mode=WAL").fetchone())
            self._write(lambda c: c.executescript("BEGIN IMMEDIATE;" + SCHEMA + "COMMIT;"), script=True)
        except sqlite3.DatabaseError as e:
            raise self._damaged(e) from None
        except OSError as e:
            raise LogError(f"cannot open the prediction log {self.path}: {e.strerror or e}") from None

    def _check_header(self) -> None:
        """Never let SQLite touch a file that is not an SQLite database: it would be left alone, but
        say so before anything else happens."""
        try:
            with open(self.path, "rb") as f:
                head = f.read(len(HEADER))
        except FileNotFoundError:
            return
        except OSError as e:
            raise LogError(f"cannot read the prediction log {self.path}: {e.strerror or e}") from None
        if head and head != HEADER:
            raise LogError(f"{self.path} is not a tracetriage prediction log (not an SQLite database); it was left "
                           "unchanged: move it aside or pass --db PATH")

    def _damaged(self, e: Exception) -> LogError:
        if "unable to open" in str(e) or "readonly" in str(e):
            return LogError(f"cannot open the prediction log {self.path} for writing ({e}); pass --db PATH")
        return LogError(f"the prediction log {self.path} is damaged ({e}); it was left unchanged: move it aside or "
                        "pass --db PATH to start a new one")

    def _retry(self, fn):
        for i in range(LOCK_RETRIES):
            try:
                return fn()
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) and "busy" not in str(e) or i == LOCK_RETRIES - 1:
                    raise
                time.sleep(0.01)

    def _write(self, fn, script: bool = False):
        def tx():
            if script:
                return fn(self.con)
            self.con.execute("BEGIN IMMEDIATE")
            try:
                out = fn(self.con)
                self.con.execute("COMMIT")
                return out
            except BaseException:
                self.con.execute("ROLLBACK")
                raise
        try:
            return self._retry(tx)
        except sqlite3.DatabaseError as e:
            if isinstance(e, sqlite3.OperationalError) and "locked" in str(e):
                raise LogError(f"the prediction log {self.path} stayed locked by another process") from None
            raise self._damaged(e) from None

    def _read(self, sql: str, args=()) -> list[sqlite3.Row]:
        try:
            self.con.row_factory = sqlite3.Row
            return self._retry(lambda: self.con.execute(sql, args).fetchall())
        except sqlite3.DatabaseError as e:
            raise self._damaged(e) from None

    def close(self) -> None:
        self.con.close()

    # --- predictions ---------------------------------------------------------------------------
    def predict(self, quantity: str, value: float, why: str, trace: str | None = None,
                baseline: str | None = None) -> int:
        return self._write(lambda c: c.execute(
            "INSERT INTO predictions (created, quantity, predicted, why, trace, baseline) VALUES (?,?,?,?,?,?)",
            (_now(), quantity, value, why, trace, baseline)).lastrowid)

    def set_measured(self, pid: int, value: float, source: str) -> None:
        self._write(lambda c: c.execute("UPDATE predictions SET measured=?, measured_from=?, measured_at=? WHERE id=?",
                                        (value, source, _now(), pid)))

    def predictions(self) -> list[dict]:
        return [dict(r) for r in self._read("SELECT * FROM predictions ORDER BY id")]

    def get(self, pid: int) -> dict | None:
        rows = self._read("SELECT * FROM predictions WHERE id=?", (pid,))
        return dict(rows[0]) if rows else None

    # --- drill attempts -------------------------------------------------------------------------
    def record_attempt(self, drill: str, score: float, answers: dict, parts: list[dict]) -> int:
        return self._write(lambda c: c.execute(
            "INSERT INTO attempts (created, drill, score, answers, parts) VALUES (?,?,?,?,?)",
            (_now(), drill, score, json.dumps(answers, default=str), json.dumps(parts, default=str))).lastrowid)

    def attempts(self) -> list[dict]:
        return [dict(r) for r in self._read("SELECT id, created, drill, score FROM attempts ORDER BY id")]


# --- measuring ---------------------------------------------------------------------------------

def measure(quantity: str, trace: str | Path, baseline: str | Path | None = None) -> float | None:
    """The measured value of a quantity from a trace (and its baseline, for a speedup)."""
    if quantity == "speedup":
        if not baseline:
            raise evidence.EvidenceError("a speedup needs a baseline: predict with --baseline BEFORE --trace AFTER")
        return evidence.diff_facts(baseline, trace).speedup
    if quantity.endswith("_ratio"):
        return evidence.whatif_ratio(trace, quantity[:-len("_ratio")])
    return evidence.quantity(evidence.facts(trace), quantity)


def measure_pending(log: Log) -> list[str]:
    """Measure every prediction whose trace now exists; returns one problem line per failure."""
    problems = []
    for p in log.predictions():
        if p["measured"] is not None or not p["trace"] or not Path(p["trace"]).exists():
            continue
        try:
            v = measure(p["quantity"], p["trace"], p["baseline"])
        except evidence.EvidenceError as e:
            problems.append(f"prediction {p['id']}: {e}")
            continue
        if v is not None:
            log.set_measured(p["id"], float(v), p["trace"])
    return problems


WORST = 3           # the misses calibration names, largest factor first


@dataclass(frozen=True)
class Calibration:
    measured: int
    median_ratio: float | None     # measured / predicted
    within_2x: float | None        # share of predictions within a factor of 2
    worst: tuple = ()              # the largest misses: {"id", "quantity", "predicted", "measured", "why", "factor"}

    def to_dict(self) -> dict:
        return {"measured": self.measured, "median_ratio": self.median_ratio, "within_2x": self.within_2x,
                "worst": list(self.worst)}


def calibration(rows: list[dict]) -> Calibration:
    """Over the measured predictions, less those warned about as a unit slip (a percent for a ratio, ms for µs):
    a slip says nothing about the student's sense of the physics, and one 100× miss would swamp the median."""
    done = [r for r in rows
            if r["measured"] is not None and r["predicted"] and r["measured"] > 0 and r["predicted"] > 0
            and slip_of(r) is None]
    ratios = [r["measured"] / r["predicted"] for r in done]
    if not ratios:
        return Calibration(0, None, None)
    within = sum(0.5 <= x <= 2.0 for x in ratios) / len(ratios)
    # a miss by a factor: 3× over and 3× under are equally far
    misses = sorted(zip(done, ratios), key=lambda rx: -abs(math.log(rx[1])))
    worst = tuple({"id": r.get("id"), "quantity": r.get("quantity"), "predicted": r["predicted"],
                   "measured": r["measured"], "why": r.get("why", ""), "factor": round(max(x, 1 / x), 2)}
                  for r, x in misses[:WORST] if not 0.5 <= x <= 2.0)
    return Calibration(len(ratios), round(statistics.median(ratios), 4), round(within, 4), worst)


def calibration_by_quantity(rows: list[dict]) -> dict[str, Calibration]:
    """The calibration of each quantity on its own: per what-if lever (`<lever>_ratio`), how the replay's
    predictions measured up (tracetriage try logs each measured run of a knob as one row)."""
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(r["quantity"], []).append(r)
    return {q: c for q, rs in out.items() if (c := calibration(rs)).measured}


def unit_slip(predicted: float, measured: float | None, unit: str) -> float | None:
    """The factor (1000, 100, 1/1000 ...) by which a prediction misses what the trace measures when it is a step
    of the unit ladder: ms for µs, a percent for a share (idle_share 19 for 0.19), a percent for a ratio or a
    speedup (speedup 392 for 3.92). A lever's ratio given as the percent it saves (fuse_ratio 78 for a ratio of
    0.22: 78% less) is SAVING_SLIP."""
    from tracetriage.drills.amounts import SLIP_TOLERANCE, slip

    if measured is None or measured <= 0:
        return None
    dim = {"ms": "time", "GB/s": "bandwidth", "TFLOP/s": "flops", "": "share", "×": "share"}.get(unit)
    f = slip(predicted, measured, dim)
    if f is None and unit == "" and 1 < predicted < 100 and measured < 1 and \
            abs((1 - predicted / 100) / measured - 1) <= SLIP_TOLERANCE:
        return SAVING_SLIP
    return f


SAVING_SLIP = -100.0   # a ratio given as the percent saved: 78 for 1 - 0.78 = 0.22


def slip_of(row: dict) -> float | None:
    """The unit slip a logged prediction was (or would be) warned about, measured now."""
    q = QUANTITIES.get(row.get("quantity", ""))
    return unit_slip(row["predicted"], row["measured"], q.unit) if q is not None else None


def ratio(row: dict) -> float | None:
    m, p = row["measured"], row["predicted"]
    return round(m / p, 4) if m is not None and p and math.isfinite(m / p) else None
