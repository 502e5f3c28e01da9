"""The try table's words: Input a command.Result; Output the text table, the markdown table or the JSON object.

One row per knob: the knob, the one line to make in the user's code (with its source line when stacks were
recorded), the predicted saving (profiled / unprofiled), the measured saving with its spread, the verdict in
plain words, and "changes numerics" for a precision knob.
"""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from tracetriage.trial.measure import NOISE_FLOOR, Saving, Verdict

if TYPE_CHECKING:
    from tracetriage.trial.results import Result, Row

SCHEMA_VERSION = 1

VERDICT_WORDS = {
    Verdict.AS_PREDICTED: "as predicted",
    Verdict.LESS: "bought less than predicted",
    Verdict.MORE: "bought more than predicted",
    Verdict.NO_CHANGE: "no change within the noise",
    Verdict.SLOWER: "made it slower",
    Verdict.MEASURED_ONLY: "measured only (nothing predicted): it saved time",
    Verdict.NOT_RUN: "not run",
    Verdict.FAILED: "failed",
}

HEADER = ("knob", "the change in your code", "predicted (profiled / unprofiled)", "measured (profiled / unprofiled)",
          "verdict")


def pct(x: float | None) -> str:
    """A saving as the change of the span it makes: a saving of 0.12 is '−12%', a slowdown '+3%'."""
    if x is None:
        return "—"
    v = round(-100 * x)
    return "0%" if v == 0 else f"{'−' if v < 0 else '+'}{abs(v)}%"


def saving_words(s: Saving | None) -> str:
    """'−12% (−15% to −9%)': the span saved, as a change of the span (a saving is a minus), and the runs' range."""
    if s is None:
        return "—"
    return f"{pct(s.median)} ({pct(s.high)} to {pct(s.low)})" if s.runs > 1 else pct(s.median)


def predicted_words(r: Row) -> str:
    p = r.proposal
    if p.predicted is None:
        return f"— ({p.why_unpriced})" if p.why_unpriced else "—"
    return f"{pct(p.predicted)} / {pct(p.predicted_unprofiled)}"


def verdict_words(r: Row) -> str:
    if r.failed is not None:
        return f"failed with {r.failed}"
    if r.verdict is Verdict.NOT_RUN and r.verdict_unprofiled is not Verdict.NOT_RUN:
        return f"{VERDICT_WORDS[r.verdict_unprofiled]} (unprofiled runs only)"
    if r.stopped and r.verdict is Verdict.NOT_RUN:
        return f"not run: {r.stopped}"
    return VERDICT_WORDS[r.verdict]


def knob_words(r: Row) -> str:
    return (r.proposal.key + (" (changes numerics)" if r.proposal.outside.numerics else "")
            + ("" if r.proposal.proposed else " (not proposed; run as --knob named it)"))


def change_words(r: Row) -> str:
    p = r.proposal
    return p.change + (f" — at {p.source}" if p.source else "")


def cells(r: Row) -> tuple[str, ...]:
    return (knob_words(r), change_words(r), predicted_words(r),
            f"{saving_words(r.profiled)} / {saving_words(r.unprofiled)}", verdict_words(r))


def text(res: Result) -> str:
    rows = [HEADER, *[cells(r) for r in res.rows]]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = [head_line(res)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    lines += foot_lines(res)
    return "\n".join(lines)


def markdown(res: Result) -> str:
    esc = [c.replace("|", "\\|") for c in HEADER]
    lines = [f"**{head_line(res)}**", "", "| " + " | ".join(esc) + " |", "|" + " --- |" * len(HEADER)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in cells(r)) + " |" for r in res.rows]
    lines += ["", *foot_lines(res)]
    return "\n".join(lines)


def head_line(res: Result) -> str:
    n, k = len(res.rows), res.repeats
    return (f"tracetriage try {res.script}: {n} knob{'s' if n != 1 else ''} to turn without editing your code, on "
            f"{res.device_words}, {k} profiled and {k} unprofiled run{'s' if k != 1 else ''} each (a saving is a "
            "minus; the spread is the runs' range)")


def foot_lines(res: Result) -> list[str]:
    out = []
    if not res.rows:
        out.append("No knob the report proposes can be turned from outside: the report's Next needs an edit "
                   f"(tracetriage report {res.before_trace}).")
    if res.left_out:
        out.append("Proposed but not turned (not among --knob): " + ", ".join(res.left_out) + ".")
    if res.gpu_only:
        out.append("Only mean something on a GPU, so not run here: "
                   + ", ".join(o.key for o in res.gpu_only) + ".")
    if any(r.proposal.outside.numerics for r in res.rows):
        out.append("changes numerics: the knob lowers the precision of the math; check your loss or outputs.")
    out.append(f"Within the noise: the prediction inside the measured spread widened by {100 * NOISE_FLOOR:.0f}% "
               "of the span.")
    if res.logged:
        n = len(res.logged)
        out.append(f"{n} measured run{'s' if n != 1 else ''} went into the prediction log as calibration "
                   f"row{'s' if n != 1 else ''} (tracetriage predictions).")
    out.append(f"Traces: before {res.before_trace}; after in {res.out}/ (tracetriage diff BEFORE AFTER on each pair).")
    if res.stopped:
        out.append(f"Stopped early: {res.stopped}; the runs done are kept above.")
    return out


def to_json(res: Result) -> dict:
    def saving(s: Saving | None):
        return None if s is None else {"median": round(s.median, 4), "low": round(s.low, 4),
                                       "high": round(s.high, 4), "runs": s.runs}
    return {"schema_version": SCHEMA_VERSION, "script": res.script, "args": res.args, "device": res.device,
            "repeats": res.repeats, "before_trace": res.before_trace, "out": str(res.out),
            "before": {"profiled_span_ns": res.before_spans, "unprofiled_wall_ns": res.before_walls},
            "knobs": [{"knob": r.proposal.key, "lever": r.proposal.lever, "change": r.proposal.change,
                       "source": r.proposal.source, "how": r.proposal.outside.how,
                       "changes_numerics": r.proposal.outside.numerics, "proposed": r.proposal.proposed,
                       "predicted": {"profiled": r.proposal.predicted, "unprofiled": r.proposal.predicted_unprofiled},
                       "measured": {"profiled": saving(r.profiled), "unprofiled": saving(r.unprofiled)},
                       "verdict": r.verdict.value, "verdict_unprofiled": r.verdict_unprofiled.value,
                       "verdict_words": verdict_words(r), "failed": r.failed,
                       "after_traces": r.after_traces} for r in res.rows],
            "gpu_only": [o.key for o in res.gpu_only], "left_out": res.left_out, "logged": res.logged,
            "stopped": res.stopped}


def dry_run_lines(script: str, plan: list[tuple[str, list[str]]], note: str) -> list[str]:
    out = [f"tracetriage try {script} --dry-run: nothing is run; it would run, each in a fresh process:"]
    out += [f"  {what}:\n    {shlex.join(cmd)}" for what, cmd in plan]
    if note:
        out.append(note)
    return out


SAVED = "try.json"      # beside the traces in --out: what the dashboard's try page reads


def save(res: Result) -> Path | None:
    """The table kept beside the after traces, as JSON (try.json), text and markdown: a later look (the
    dashboard's try page, a pull request) needs no second run. None where the folder cannot be written."""
    import json

    base = Path(res.out) / SAVED
    try:
        base.write_text(json.dumps(to_json(res), indent=2) + "\n", encoding="utf-8")
        base.with_suffix(".txt").write_text(text(res) + "\n", encoding="utf-8")
        base.with_suffix(".md").write_text(markdown(res) + "\n", encoding="utf-8")
    except OSError:
        return None
    return base
