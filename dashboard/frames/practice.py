"""The Practice page's frames: the drills, the answer form's fields as the answer file's types, the grade,
the prediction log, and what `tracetriage drill show` prints beside the timeline."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from tracetriage.dashboard import words as dashboard_words
from tracetriage.drills import words as drill_words


@dataclass(frozen=True)
class DrillView:
    id: str
    title: str
    lesson: str
    kind: str
    source: str
    questions: tuple[str, ...]
    parts: tuple[tuple[str, str, str], ...]     # (part, answer type, what the answer holds)
    rubric: str                                 # the rubric line drill show prints


def drills() -> list[DrillView]:
    from tracetriage.drills import bank

    return [DrillView(d.id, d.title, d.lesson, d.kind, d.source(), d.questions,
                      tuple((k, t, doc) for k, (t, doc) in d.parts.items()),
                      drill_words.rubric_line(d.rubric, d.decisive, d.cap_if_wrong)) for d in bank.all_drills()]


def drill_traces(drill_id: str) -> list[Path]:
    """The trace a drill shows (a toy timeline is written from its seed), and its `after` trace if it has one."""
    from tracetriage.drills import bank

    d = bank.get(drill_id)
    return [d.trace_path()] + ([d.after_path()] if d.after else [])


def drill_answers(drill_id: str, raw: dict[str, str]) -> dict:
    """The form's text fields as the answer file's types: numbers parsed, a list of names split at commas.
    Raises AnswerError (one line) for a number that is not one; a blank field is a blank answer."""
    from tracetriage.drills import bank
    from tracetriage.drills.amounts import amounts
    from tracetriage.drills.answers import AnswerError

    d = bank.get(drill_id)
    out = {}
    for part, (kind, _doc) in d.parts.items():
        text = (raw.get(part) or "").strip()
        if not text:
            continue
        if kind == bank.NUMBER:
            try:
                v = float(text)
            except ValueError:
                if not amounts(text):    # "0.79 PFLOP/s": a number with its unit, graded in the key's unit
                    raise AnswerError(dashboard_words.answer_not_a_number(part, text)) from None
                out[part] = text
                continue
            if not np.isfinite(v):
                raise AnswerError(dashboard_words.answer_not_a_number(part, text))
            out[part] = v
        elif kind == bank.NAMES and "," in text:
            out[part] = [x.strip() for x in text.split(",") if x.strip()]
        else:
            out[part] = text
    return out


@dataclass(frozen=True)
class GradeView:
    drill: str
    score: float
    summary: str
    parts: pd.DataFrame         # part, score, weight, answer, expected, feedback
    notes: list[str]
    attempt: int
    db: str


def grade_drill(drill_id: str, answers: dict, db: str | None = None) -> GradeView:
    """Grade like `tracetriage drill grade`, and record the attempt in the prediction log."""
    from tracetriage.drills import bank, grader
    from tracetriage.drills.predictions import Log

    d = bank.get(drill_id)
    result = grader.grade(d, answers)
    out = result.to_dict()
    log = Log(db)
    try:
        attempt = log.record_attempt(d.id, result.score, answers, out["parts"])
        path = str(log.path)
    finally:
        log.close()
    parts = pd.DataFrame([{"part": p.part, "score": p.score, "weight": p.weight,
                           "answer": "" if p.answer is None else str(p.answer), "expected": str(p.expected),
                           "feedback": p.feedback} for p in result.parts],
                         columns=["part", "score", "weight", "answer", "expected", "feedback"])
    return GradeView(d.id, result.score, drill_words.summary(d.id, result.score), parts, list(result.notes), attempt,
                     path)


@dataclass(frozen=True)
class LogView:
    db: str
    predictions: pd.DataFrame   # id, quantity, predicted, measured, unit, ratio, why, trace
    calibration: str            # the sentence `tracetriage predictions` prints
    attempts: pd.DataFrame      # id, created, drill, score
    attempts_line: str
    problems: list[str]


def prediction_log(db: str | None = None) -> LogView:
    """The prediction log as `tracetriage predictions` shows it (pending predictions measured first)."""
    from tracetriage.drills import predictions as pr

    log = pr.Log(db)
    try:
        problems = pr.measure_pending(log)
        rows = log.predictions()
        attempts = log.attempts()
        path = str(log.path)
    finally:
        log.close()
    cal = pr.calibration(rows)
    preds = pd.DataFrame([{"id": r["id"], "quantity": r["quantity"], "predicted": r["predicted"],
                           "measured": r["measured"],
                           "unit": pr.QUANTITIES[r["quantity"]].unit if r["quantity"] in pr.QUANTITIES else "",
                           "ratio": pr.ratio(r), "why": r["why"], "trace": r["trace"] or ""} for r in rows],
                         columns=["id", "quantity", "predicted", "measured", "unit", "ratio", "why", "trace"])
    att = pd.DataFrame(attempts, columns=["id", "created", "drill", "score"])
    mean = float(att["score"].mean()) if len(att) else None
    return LogView(path, preds, drill_words.calibration(cal.measured, cal.median_ratio, cal.within_2x), att,
                   drill_words.attempts_line(len(att), mean), problems)


def _drill_errors() -> tuple[type[Exception], ...]:
    from tracetriage.drills.commands import USER_ERRORS

    return USER_ERRORS


DrillErrors = _drill_errors()   # what a drill, an answer or the log raises for the user: one line each


@dataclass(frozen=True)
class DrillTables:
    """What `tracetriage drill show` prints beside the timeline, and nothing more (no answer)."""
    span_line: str | None           # triage: the GPU span, busy and idle shares
    operators: pd.DataFrame | None  # triage: name, share, device_us, calls
    lines: tuple[str, ...] = ()     # every other kind (and triage's idle by host call): the lines `drill show`
                                    # prints (tracetriage.drills.commands.evidence_lines)


def drill_tables(drill_id: str) -> DrillTables:
    from tracetriage.drills import bank, evidence
    from tracetriage.drills.commands import evidence_lines, show_info

    d = bank.get(drill_id)
    if d.kind != "triage":
        return DrillTables(None, None, tuple(evidence_lines(d, show_info(d))))
    f = evidence.facts(d.trace_path())
    ops = pd.DataFrame(f.hotspots, columns=["name", "share", "device_us", "calls"])
    # the span line and the operator table as a table, as show prints them (no idle summed by host call)
    return DrillTables(drill_words.span_line(f.span_ms, f.kernel_busy_ms, f.idle_share), ops)
