"""The Try page's frame: a `tracetriage try` table as kept beside its traces (OUT/try.json, written by
tracetriage.trial.voice.save), as one row per knob and kind (predicted, measured) and run (profiled,
unprofiled). Savings are signed as the table prints them: the change of the span, a saving is a minus."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

SAVED = "try.json"
COLUMNS = ("knob", "kind", "run", "change_pct", "low_pct", "high_pct", "runs", "verdict", "change")


class TryTableError(Exception):
    """No try table at that path, or not one: one line for the page."""


@dataclass(frozen=True)
class TryView:
    path: str
    script: str
    device: str
    repeats: int
    bars: pd.DataFrame           # COLUMNS; predicted rows have no range
    rows: pd.DataFrame           # one per knob: knob, change, verdict, predicted and measured as the table says
    gpu_only: tuple[str, ...]
    stopped: str | None


def _pct(x) -> float | None:
    return None if x is None else round(-100 * x, 1)


def try_table(path: str | Path) -> TryView:
    p = Path(path)
    if p.is_dir():
        p = p / SAVED
    try:
        obj = json.loads(p.read_text(encoding="utf-8"))
        knobs, script = obj["knobs"], obj["script"]
    except FileNotFoundError:
        raise TryTableError(f"no try table at {path} (tracetriage try keeps one as {SAVED} in its --out)") from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise TryTableError(f"{path}: not a try table ({type(e).__name__})") from None
    bars, rows = [], []
    for k in knobs:
        for run in ("profiled", "unprofiled"):
            pred, meas = k["predicted"][run], k["measured"][run]
            if pred is not None:
                bars.append((k["knob"], "predicted", run, _pct(pred), None, None, 0, k["verdict_words"], k["change"]))
            if meas is not None:
                bars.append((k["knob"], "measured", run, _pct(meas["median"]), _pct(meas["high"]), _pct(meas["low"]),
                             meas["runs"], k["verdict_words"], k["change"]))
        rows.append({"knob": k["knob"], "change": k["change"], "verdict": k["verdict_words"],
                     "predicted": k["predicted"], "measured": k["measured"]})
    return TryView(str(p), script, obj.get("device", ""), obj.get("repeats", 0),
                   pd.DataFrame(bars, columns=list(COLUMNS)), pd.DataFrame(rows), tuple(obj.get("gpu_only", ())),
                   obj.get("stopped"))
