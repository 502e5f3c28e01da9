"""`tracetriage drill ...`, `predict`, `predictions`: what the commands do (tracetriage/cli.py parses).

Never imports torch, triton or streamlit: only the analyzers, rich and the standard library.
Every user error is one of USER_ERRORS, printed by the CLI as one `error: ...` line with exit 2.
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from tracetriage.analyzers.model.units import num
from tracetriage.drills import bank
from tracetriage.drills.answers import AnswerError
from tracetriage.drills.bank import DrillError
from tracetriage.drills.evidence import EvidenceError
from tracetriage.drills.ladder import show as ladder_show
from tracetriage.drills.ladder.parts import KINDS as LADDER_KINDS
from tracetriage.drills.ladder.parts import PREDICT as LADDER_PREDICT
from tracetriage.drills.predictions import LogError
from tracetriage.drills.quantities import QUANTITIES, QuantityError, checked
from tracetriage.drills.words import (
    after_kernel_row,
    answer_keys_help,
    attempts_line,
    calibration,
    declared_line,
    device_peaks,
    gap_row,
    grade_row,
    kernel_row,
    kernel_table_header,
    large_gaps_header,
    no_prediction,
    operator_row,
    pass_row,
    passes_header,
    prediction_first,
    prediction_note,
    prediction_recorded,
    quantity_calibration,
    range_row,
    repeats_header,
    repeats_row,
    rubric_line,
    span_line,
    summary,
    sweep_header,
    sweep_row,
    unit_slip_warning,
    worst_miss,
)

USER_ERRORS = (DrillError, AnswerError, EvidenceError, LogError, QuantityError)


def _json(obj) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")


def _console():
    """A console as wide as the terminal, or as COLUMNS says (rich reads it). Piped with no COLUMNS, rich
    would assume 80 columns and cut a table's cells; the full text is wanted there, so the console is
    then as wide as the widest table needs. Tables fold a long cell (overflow="fold"), never cut it."""
    from rich.console import Console

    con = Console(highlight=False, soft_wrap=True)
    if not con.is_terminal and not os.environ.get("COLUMNS"):
        con = Console(highlight=False, soft_wrap=True, width=UNLIMITED_WIDTH)
    return con


UNLIMITED_WIDTH = 1 << 16   # a table takes only the width its cells need (rich tables do not expand by default)


# --- drill list / show / grade ------------------------------------------------------------------

def drill_list(as_json: bool) -> int:
    drills = bank.all_drills()
    if as_json:
        _json([{"id": d.id, "title": d.title, "lesson": d.lesson, "kind": d.kind, "source": d.source()}
               for d in drills])
        return 0
    from rich.table import Table

    t = Table(title=f"{len(drills)} drills", show_lines=False)
    for col in ("id", "title", "lesson", "trace"):
        t.add_column(col, overflow="fold")
    for d in drills:
        t.add_row(d.id, d.title, d.lesson, d.source())
    _console().print(t)
    return 0


def show_info(d: bank.Drill) -> dict:
    from tracetriage.drills import evidence

    out = {"id": d.id, "title": d.title, "lesson": d.lesson, "kind": d.kind, "source": d.source(),
           "trace": str(d.trace_path()), "after": str(d.after_path()) if d.after else None,
           "questions": list(d.questions),
           "answer_keys": {k: {"type": t, "doc": doc} for k, (t, doc) in d.parts.items()},
           "rubric": d.rubric, "decisive": d.decisive, "cap_if_wrong": d.cap_if_wrong}
    if d.kind == "triage":
        f = evidence.facts(d.trace_path())
        out["operator_table"] = f.hotspots
        out["span"] = {"span_ms": f.span_ms, "kernel_busy_ms": f.kernel_busy_ms, "idle_share": f.idle_share}
    if d.kind == "ranges":
        out["ranges"] = [{k: r[k] for k in RANGE_SHOWN} for r in evidence.facts(d.trace_path()).ranges]
    if d.kind == "incident":
        out["ticket"] = d.ticket
        out["slo"] = d.slo
        # a trace without named ranges: the passes the report reads its phases from, so TTFT and the per-token time
        # are read from what show prints, as the ranges drill reads its ranges
        # (not which phase each is: that is the student's to name)
        # (nor a statistic of its walls, nor where its first token reaches the host: each pass's wall and the
        # device-to-host copies are the evidence they are read from)
        out["passes"] = [{**{k: p[k] for k in PASS_SHOWN if k in p}, "forward": p["kind"] != "other"}
                         for p in evidence.facts(d.trace_path()).passes]
    if d.kind in ("waste",):
        f = evidence.facts(d.trace_path())
        out["operator_table"] = f.hotspots
        out["span"] = {"span_ms": f.span_ms, "kernel_busy_ms": f.kernel_busy_ms, "idle_share": f.idle_share}
    if d.kind in KERNEL_TABLE_KINDS:
        f = evidence.facts(d.trace_path())
        # the shapes drill asks for the rates: it gets FLOPs, bytes and time; so does a drill on a trace a shapes
        # drill shows (its rates per shape would answer M01.04)
        # drill shows (its rates per shape would answer M01.04), nor the roofline drill, which asks the achieved rate
        rates = d.kind not in ("shapes", "roofline") and not any(bank.get(o).kind == "shapes"
                                                                 for o in bank.shared_with(d))
        # each op's own bound is the regime question half answered: never printed before grading
        out["kernels"] = [{x: v for x, v in k.items() if x != "bound" and (rates or x not in ("tflops", "gbps"))}
                          for k in (_shape_rows(f, d) if d.kind == "shapes" else f.kernels)]
    if d.kind == "floor":
        f = evidence.facts(d.trace_path())
        out["declared"] = {k: f.declared[k] for k in ("weight_bytes", "model") if k in f.declared}
        out["peak_gbps"] = f.peak_gbps
        # the decode ranges the floor is measured against; not the prefill's wall, which is another drill's TTFT
        prefill = f.phases.get("prefill_range") if f.phases else None
        out["ranges"] = [{k: r[k] for k in RANGE_SHOWN} for r in f.ranges if r["name"] != prefill]
    if d.kind == "ledger" and d.after:
        # what a pass is counted from: the after trace's kernels a call, and the tensors each is handed
        out["after_kernels"] = evidence.fused_calls(d.trace_path(), d.after_path())
    if d.kind == "timer":
        out["repeats"] = _repeats(d)
    if d.kind in LADDER_KINDS:
        out["ladder"] = ladder_show.info(d)
    out["predict_first"] = prediction_quantity(d)
    return out


PASS_SHOWN = ("first", "last", "batch", "tokens", "by_structure", "start_ms", "walls_ms", "to_host_ms")
KERNEL_TABLE_KINDS = ("roofline", "shapes", "ledger", "floor")
# a range as show prints it: its instances (a few, each one's start and end), the wall they cover and their kernels'
# busy time; never a statistic of the walls (the median wall is the ranges drill's TTFT)
RANGE_SHOWN = ("name", "count", "wall_us", "kernel_busy_us", "instances")
# What a drill asks you to predict before you look closer (tracetriage.drills.quantities names them).
PREDICT = {"idle_cause": "idle_share", "triage": "idle_share", "ranges": "ttft_ms", "incident": "ttft_ms",
           "roofline": "intensity", "collapse": "speedup", "waste": "idle_share", "ledger": "fuse_ratio",
           "shapes": "tflops", "floor": "per_token_ms", "timer": "span_ms", **LADDER_PREDICT}


def prediction_quantity(d: bank.Drill) -> str:
    return PREDICT[d.kind]


def _shape_rows(f, d: bank.Drill) -> list[dict]:
    """The matmul points of the two shapes the drill names (its ranges: mm_MxNxK), from the roofline."""
    dims = [r.removeprefix("mm_").split("x") for r in d.shapes]
    want = {f"{m}x{k}, {k}x{n}" for m, n, k in dims}
    rows = [k for k in f.kernels if k["shapes"] in want]
    return rows or f.kernels


ASIDE = re.compile(r"\s*\([^()]*[:;][^()]*\)")   # an aside that reads the workload ("16 KiB: launch-bound")


def shown_about(about: str) -> str:
    """A capture's description of its workload without its asides: the capture's own reading ("16 KiB: launch-bound",
    "each eager kernel ~5-15 µs, about its launch") is what another drill on the same trace asks."""
    return ASIDE.sub("", about)


def _repeats(d: bank.Drill) -> dict:
    m = json.loads((bank.REPO_ROOT / "traces" / "realworld" / "measured.json").read_text())
    sc = m["scenarios"][d.scenario]
    return {"scenario": d.scenario, "about": shown_about(sc["about"]),
            "calls": int(sc["iters"]) if sc.get("iters") else None,
            "wall_ms": {v: [round(x, 4) for x in sc["wall_ms"][v]["runs"]] for v in d.variants}}


def drill_show(drill_id: str, as_json: bool, reveal: bool = False) -> int:
    d = bank.get(drill_id)
    info = show_info(d)
    if as_json:
        _json(info)
        return 0
    from tracetriage.drills import evidence, render

    con = _console()
    con.print(f"[bold]{d.id}  {d.title}[/bold]   ({d.lesson})")
    con.print(f"trace: {info['trace']}" + (f"\nafter: {info['after']}" if d.after else ""))
    con.print(f"source: {d.source()}")
    for path in [d.trace_path()] + ([d.after_path()] if d.after else []):
        t = evidence.lanes(path)
        con.print(render.draw(t, title=f"{Path(path).name}: the whole GPU span", cause_marks=reveal))
        idle_by_cause: dict[str, float] = {}
        for s, e, c in t.gaps:
            idle_by_cause[c] = idle_by_cause.get(c, 0.0) + e - s
        most = max(idle_by_cause, key=idle_by_cause.get) if idle_by_cause else None
        win = render.zoom_window(t, most)
        if win:
            con.print(render.draw(t, window=win, title="zoomed on a few of the gaps that hold most idle time",
                                  cause_marks=reveal))
        gaps = render.large_gaps(t)
        if gaps:
            con.print(large_gaps_header(), markup=False)
            for start, length, call in gaps:
                con.print(gap_row(start, length, call), markup=False)
    for line in evidence_lines(d, info):
        con.print(line, markup=False)
    con.print("\n" + prediction_first(info["predict_first"], str(d.trace_path())), markup=False)
    con.print("\n[bold]questions[/bold]")
    for q in d.questions:
        con.print(f"  - {q}")
    con.print("\n[bold]answer file[/bold] (TOML; tracetriage drill grade "
              f"{d.id} --answers FILE):")
    for line in answer_keys_help(d.parts):
        con.print(line, markup=False)
    con.print(rubric_line(d.rubric, d.decisive, d.cap_if_wrong))
    return 0



def evidence_lines(d: bank.Drill, info: dict) -> list[str]:
    """What `drill show` prints of the trace beside its timelines, kind by kind: the evidence a drill is answered
    from (never a statistic the drill asks: the student takes it). The dashboard's Drills page shows these lines."""
    out: list[str] = []
    # the bound rule asks whether one cause holds 10% of the span, the cause drills which cause the gaps wait on: the
    # timelines and the longest gaps with the host call during each are what a timeline reader sees; the idle summed
    # by host call is not printed (it maps one-to-one onto the cause classes: the question answered for the student)
    if d.kind == "triage":
        out.append(span_line(**info["span"]))
        out.append("operator table (device time):")
        for h in info["operator_table"]:
            out.append(operator_row(h))
    if d.kind == "ranges":
        out.append("named ranges (wall: from the range's start to its last GPU activity's end):")
        for r in info["ranges"]:
            out.append(range_row(r))
    if d.kind == "incident":
        out.append(passes_header())
        for r in info["passes"]:
            out.append(pass_row(r))
        out.append(f"ticket: {d.ticket}")
    if d.kind == "waste":
        out.append(span_line(**info["span"]))
        out.append("operator table (device time):")
        for h in info["operator_table"]:
            out.append(operator_row(h))
    if "kernels" in info:
        out.append(kernel_table_header())
        for k in info["kernels"]:
            out.append(kernel_row(k))
        peaks = info["kernels"][0] if info["kernels"] else None
        if peaks:
            out.append(device_peaks(peaks["peak_tflops"], peaks["dtype"], peaks["peak_gbps"]))
    if info.get("after_kernels"):
        out.append("the after trace's kernels (a call: the before trace's chains are its calls):")
        out += [after_kernel_row(k) for k in info["after_kernels"]]
    if d.kind == "floor":
        out.append(declared_line(info["declared"], info["peak_gbps"]))
        for r in info["ranges"]:
            out.append(range_row(r))
    if d.kind == "timer":
        rep = info["repeats"]
        out.append(repeats_header(rep["scenario"], rep["about"], rep["calls"]))
        for v, runs in rep["wall_ms"].items():
            out.append(repeats_row(v, runs))
    if d.kind in LADDER_KINDS:
        for line in ladder_show.lines(d, info["ladder"]):
            out.append(line)
    if d.kind == "collapse":
        sweep = _fusion_sweep()
        if sweep:
            out.append(sweep_header())
            for r in sweep:
                out.append(sweep_row(r))
    return out


def drill_grade(drill_id: str, answers_path: str, as_json: bool, db: str | None) -> int:
    from tracetriage.drills import answers, grader
    from tracetriage.drills.predictions import Log

    d = bank.get(drill_id)
    ans = answers.read(answers_path, d)         # a malformed file stops here: nothing recorded
    log = Log(db)
    result = grader.grade(d, ans)
    out = result.to_dict()
    out["attempt"] = log.record_attempt(d.id, result.score, ans, out["parts"])
    out["trace"] = str(d.trace_path())
    out["prediction"] = _prediction_first(log, d)
    log.close()
    result.notes.append(prediction_note(out["prediction"]["quantity"], out["prediction"]["predicted"],
                                        out["prediction"]["measured"]) if out["prediction"]["predicted"] is not None
                        else no_prediction(prediction_quantity(d)))
    out["notes"] = list(result.notes)
    if as_json:
        _json(out)
        return 0
    con = _console()
    con.print(f"[bold]{summary(d.id, result.score)}[/bold]  {d.title}")
    for p in result.parts:
        con.print(grade_row(p.part, p.score, p.weight), end="")
        con.print(p.feedback, markup=False)
    for n in result.notes:
        con.print(f"  {n}", markup=False)
    return 0


def _prediction_first(log, d: bank.Drill) -> dict:
    """The latest prediction the log holds for this drill's trace and quantity (made with `tracetriage predict`
    before answering), measured now."""
    from tracetriage.drills import predictions as pr

    q = prediction_quantity(d)
    trace = str(Path(d.trace_path()).resolve())
    rows = [r for r in log.predictions() if r["quantity"] == q and r["trace"] == trace]
    if not rows:
        return {"quantity": q, "predicted": None, "measured": None}
    r = rows[-1]
    measured = r["measured"]
    if measured is None:
        try:
            measured = pr.measure(q, trace, r["baseline"])
        except EvidenceError:
            measured = None
        if measured is not None:
            log.set_measured(r["id"], float(measured), trace)
    return {"quantity": q, "predicted": r["predicted"], "measured": measured, "id": r["id"]}


def _fusion_sweep() -> list[dict]:
    """The capture's own size sweep (eager against fused, timed with CUDA events), when the sample library has it."""
    path = bank.REPO_ROOT / "traces" / "measurements.json"
    try:
        return json.loads(path.read_text()).get("fusion_sweep", [])
    except (OSError, ValueError):
        return []


# --- predict / predictions ----------------------------------------------------------------------

def predict(quantity: str, value: str, why: str, trace: str | None, baseline: str | None, db: str | None) -> int:
    from tracetriage.drills.predictions import Log

    q, v = checked(quantity, value)
    if not why or not why.strip():
        raise DrillError("--why needs one sentence of reasoning: the prediction is worth nothing without it")
    if "\n" in why.strip():
        raise DrillError("--why takes one sentence, on one line")
    if quantity == "speedup" and not baseline:
        raise DrillError("a speedup is measured against a baseline: add --baseline BEFORE (and --trace AFTER)")
    trace = str(Path(trace).resolve()) if trace else None
    baseline = str(Path(baseline).resolve()) if baseline else None
    log = Log(db)
    pid = log.predict(quantity, v, why.strip(), trace, baseline)
    log.close()
    print(prediction_recorded(pid, quantity, v, q.unit, trace))
    if trace and Path(trace).exists():
        from tracetriage.drills import predictions as pr

        try:
            m = pr.measure(quantity, trace, baseline)
        except EvidenceError:
            m = None
        f = pr.unit_slip(v, m, q.unit)
        if f is not None:
            print(f"warning: {unit_slip_warning(quantity, v, m, q.unit, f)}", file=sys.stderr)
    return 0


def predictions(as_json: bool, db: str | None, measure: list[str] | None, baseline: str | None) -> int:
    from tracetriage.drills import predictions as pr

    log = pr.Log(db)
    if measure:
        pid_s, trace = measure
        try:
            pid = int(pid_s)
        except ValueError:
            raise DrillError(f"--measure takes a prediction id and a trace, got {pid_s!r}") from None
        row = log.get(pid)
        if row is None:
            raise DrillError(f"no prediction {pid} in {log.path}")
        v = pr.measure(row["quantity"], trace, baseline or row["baseline"])
        if v is None:
            raise DrillError(f"{Path(trace).name} has no {row['quantity']} to measure")
        log.set_measured(pid, float(v), str(Path(trace).resolve()))
    problems = pr.measure_pending(log)
    rows = log.predictions()
    cal = pr.calibration(rows)
    attempts = log.attempts()
    log.close()
    mean = sum(a["score"] for a in attempts) / len(attempts) if attempts else None
    if as_json:
        _json({"db": str(log.path), "quantities": {q.name: {"unit": q.unit, "doc": q.doc, "range": q.range_words()}
                                                      for q in QUANTITIES.values()},
               "predictions": [{**r, "ratio": pr.ratio(r)} for r in rows], "calibration": cal.to_dict(),
               "calibration_by_quantity": {q: c.to_dict() for q, c in pr.calibration_by_quantity(rows).items()},
               "attempts": attempts, "problems": problems})
        return 0
    from rich.table import Table

    t = Table(title=f"predictions in {log.path}")
    for col in ("id", "quantity", "predicted", "measured", "measured/predicted", "why"):
        t.add_column(col, overflow="fold")
    for r in rows:
        unit = QUANTITIES[r["quantity"]].unit if r["quantity"] in QUANTITIES else ""
        t.add_row(str(r["id"]), r["quantity"], f"{num(r['predicted'])} {unit}",
                  f"{num(r['measured'])} {unit}" if r["measured"] is not None else "pending",
                  f"{pr.ratio(r):.2f}×" if pr.ratio(r) else "", r["why"])
    con = _console()
    con.print(t)
    con.print(calibration(cal.measured, cal.median_ratio, cal.within_2x))
    per = pr.calibration_by_quantity(rows)
    if len(per) > 1:
        for q, c in per.items():
            con.print(quantity_calibration(q, c.measured, c.median_ratio, c.within_2x), markup=False)
    for w in cal.worst:
        con.print(worst_miss(w["id"], w["quantity"], w["predicted"], w["measured"], w["why"]), markup=False)
    con.print(attempts_line(len(attempts), mean))
    for p in problems:
        print(f"warning: {p}", file=sys.stderr)
    return 0
