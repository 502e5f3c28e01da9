"""Drills and predictions: pick a drill, read its timeline (gaps unmarked), answer, grade; and the
prediction log with its calibration plot (the drills' grader and log, through the adapter)."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from tracetriage.dashboard import charts, data, state, tables
from tracetriage.dashboard import words as words

BINS = 400


def _timeline(path: Path) -> None:
    """The Timeline page's chart for the whole trace, without the idle gaps' causes."""
    try:
        a = state.analysis_of_path(path)
    except data.TraceError as e:
        state.show_error(str(e))
        return
    lo, hi = data.timeline_extent(a)
    if data.events_in(a, (lo, hi)) > data.RAW_LIMIT:
        frames = data.without_causes(data.timeline_overview(a, (lo, hi), bins=BINS))
        chart = charts.timeline_overview(frames, lo, hi, causes=False)
    else:
        chart = charts.timeline_bars(data.without_causes(data.timeline_bars(a, (lo, hi))), lo, hi, causes=False)
    st.caption(words.plain(words.drill_timeline_caption(path.name)))
    st.altair_chart(chart, width="stretch")


def _drill() -> None:
    st.subheader("Drill")
    drills = data.drills()
    d = st.selectbox("Drill", drills, format_func=lambda x: words.drill_label(x.id, x.title), key="drill_pick")
    if d is None:
        return
    st.caption(words.plain(words.drill_about(d.lesson, d.kind, d.source)))
    try:
        paths = data.drill_traces(d.id)
    except (*data.DrillErrors, OSError) as e:   # a drill's trace that cannot be written: one line
        state.show_error(str(e))
        return
    for p in paths:
        _timeline(p)
    drill_tables = data.drill_tables(d.id)
    if drill_tables.span_line:
        st.markdown(words.plain(drill_tables.span_line))
    if drill_tables.operators is not None:
        tables.show(drill_tables.operators, {"name": tables.text("op", width="large"), "share": tables.share("share"),
                                             "device_us": tables.us("device (µs)"), "calls": tables.count("calls")})
    if drill_tables.lines:
        st.code("\n".join(drill_tables.lines), language=None)
    for q in d.questions:
        st.markdown(words.plain(f"• {q}"))
    with st.form(key=f"drill_form_{d.id}"):
        raw = {part: st.text_input(part, key=f"answer_{d.id}_{part}", help=doc) for part, _t, doc in d.parts}
        st.caption(words.plain(d.rubric))
        go = st.form_submit_button("Grade")
    if not go:
        return
    try:
        answers = data.drill_answers(d.id, raw)
        g = data.grade_drill(d.id, answers)
    except data.DrillErrors as e:
        state.show_error(str(e))
        return
    st.subheader(words.plain(g.summary))
    for r in g.parts.itertuples():
        st.markdown(words.plain(words.part_feedback(r.part, r.score, r.weight, r.feedback)))
    for n in g.notes:
        st.markdown(words.plain(n))
    st.caption(words.plain(words.attempt_recorded(g.attempt, g.db)))


def _log() -> None:
    st.subheader("Prediction log")
    try:
        v = data.prediction_log()
    except data.DrillErrors as e:
        state.show_error(str(e))
        return
    for p in v.problems:
        st.caption(words.plain(p))
    if not len(v.predictions):
        st.caption(words.plain(words.no_predictions(v.db)))
    else:
        st.markdown(words.plain(v.calibration))
        tables.show(v.predictions, {"id": tables.count("id"), "quantity": tables.text("quantity"),
                                    "predicted": tables.number("predicted", 3),
                                    "measured": tables.number("measured", 3),
                                    "unit": tables.text("unit"), "ratio": tables.number("measured/predicted"),
                                    "why": tables.text("why", width="large"), "trace": tables.text("trace")})
        pts = v.predictions.dropna(subset=["measured"])
        pts = pts[(pts["measured"] > 0) & (pts["predicted"] > 0)]
        if len(pts):
            st.altair_chart(charts.calibration(pts), width="content")
            st.caption(words.plain(words.calibration_caption(len(pts), len(v.predictions))))
    st.markdown(words.plain(v.attempts_line))
    if len(v.attempts):
        tables.show(v.attempts, {"id": tables.count("attempt"), "created": tables.text("when"),
                                 "drill": tables.text("drill"), "score": tables.share("score")})


def render() -> None:
    _drill()
    _log()
