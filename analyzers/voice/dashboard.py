"""The dashboard's words: captions, tooltips, table cells and messages of every page. Text shown
through st.markdown goes through `plain` first, so a kernel name is never markup or HTML.
"""
from __future__ import annotations

import re

from analyzers.model.units import duration_ns, duration_us, saving_pct
from analyzers.voice.common import CAUSE_WORDS

_MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$&:])")


def plain(text: str) -> str:
    """Text shown through st.markdown as the characters it holds: no markup, no HTML, no links."""
    return _MARKDOWN_SPECIALS.sub(r"\\\1", str(text))


def dashboard_cause(c: str | None) -> str:
    """A cause's words from its value ('launch_overhead'), 'none' for no cause."""
    return CAUSE_WORDS.get(c, c) if c else "none"

cause = dashboard_cause   # (the dashboard's tables map cause values to words with it)


# --- the library -------------------------------------------------------------------------------------


def upload_too_large(name: str, size_bytes: int, cap_mb: int) -> str:
    return (f"{name} is {size_bytes / 1e6:.0f} MB, over the {cap_mb} MB upload limit; start the dashboard with "
            f"TRACETRIAGE_UPLOAD_MB set higher, or pass the file on the command line")


def trace_error(message: str) -> str:
    return f"error: {message}"


def loaded(name: str, events: int, device: str) -> str:
    return f"Loaded {name}: {events:,} events on {device}."


def sample_about(about: str, cause_label: str | None, regime: str | None) -> str:
    built = ", ".join(x for x in (f"idle: {dashboard_cause(cause_label)}" if cause_label else "",
                                  f"regime: {regime}" if regime else "") if x)
    return f"{about} ({built})" if built else about


# --- report ------------------------------------------------------------------------------------------


def cause_evidence(c: str, gaps: int, median_gap_us: float, max_gap_us: float, names: list[str]) -> str:
    if gaps == 0:
        return "no gaps"
    s = f"{gaps:,} gap{'s' if gaps != 1 else ''}, median {duration_us(median_gap_us)}, longest {duration_us(max_gap_us)}"
    return s + (f"; {', '.join(names)}" if names else "")


def phase_summary(ttft_us: float, per_token_us: float, steps: int, tokens_per_prefill: int) -> str:
    return (f"Time to first token {duration_us(ttft_us)}; {duration_us(per_token_us)} per token over {steps} decode steps "
            f"({tokens_per_prefill} per prefill).")


def phase_detail(label: str, regime: str, idle_share: float, idle_dominant: str | None, median_wall_us: float) -> str:
    idle = f"idle {100 * idle_share:.0f}%" + (f", mostly {dashboard_cause(idle_dominant)}" if idle_dominant else "")
    return f"{label}: {regime}-bound, {idle}, median {duration_us(median_wall_us)} per instance"


# --- timeline ----------------------------------------------------------------------------------------


def window_caption(events: int, lo_us: float, hi_us: float, limit: int, bins: int | None) -> str:
    span = f"{duration_us(lo_us)} to {duration_us(hi_us)}"
    if bins is not None:
        return (f"{events:,} events from {span}: shown as busy shares in {bins} bins. Drag across the chart to zoom; "
                f"each event is drawn once the window holds {limit:,} or fewer.")
    return f"{events:,} events from {span}, each drawn. Drag across the chart to zoom further."


def bin_tooltip(lane: str, busy: float) -> str:
    return f"{lane}: busy {100 * busy:.0f}% of the bin"


def idle_bin_tooltip(idle: float, shares: dict[str, float]) -> str:
    parts = ", ".join(f"{dashboard_cause(c)} {100 * v:.0f}%" for c, v in sorted(shares.items(), key=lambda kv: -kv[1]) if v > 0)
    return f"idle {100 * idle:.0f}% of the bin: {parts}"


def gap_evidence(c: str, dur_us: float, host_call: str, called_from: str, next_name: str) -> str:
    s = f"{dashboard_cause(c)} gap of {duration_us(dur_us)}"
    if host_call:
        s += f"; the host was in {host_call}" + (f" (from {called_from})" if called_from else "")
    if next_name:
        s += f"; ended by {next_name}"
    return s


# --- roofline ----------------------------------------------------------------------------------------


def ceilings_caption(device: str, source: str, dtype: str, tflops: float, gbps: float, ridge: float) -> str:
    where = "measured on this machine (tracetriage capture ceilings)" if source != "datasheet" else "from the datasheet"
    return (f"{device}, {dtype}: {tflops:,.0f} TFLOP/s and {gbps:,.0f} GB/s, ridge at {ridge:,.0f} FLOP/byte; "
            f"ceilings {where}.")


def ridge_label(ridge: float) -> str:
    return f"ridge {ridge:,.0f} FLOP/byte"


def no_ceilings(device: str) -> str:
    return f"No peak table entry for {device}: the roofline has no ceilings (run tracetriage capture ceilings)."


def points_caption(shown: int, total: int, dtype: str) -> str:
    hidden = total - shown
    s = f"{shown:,} op{'s' if shown != 1 else ''} in {dtype}, sized by device time, coloured by bound"
    return s + (f"; {hidden:,} with no FLOPs (copies, fills) are off the log axes." if hidden else ".")


def no_points() -> str:
    return "No op in this trace has a cost model (no shapes recorded): nothing to place on the roofline."


# --- diff --------------------------------------------------------------------------------------------


def diff_headline(before: str, after: str, speedup: float | None, explained_by: str) -> str:
    sp = f"{speedup:.2f}× speedup" if speedup else "no speedup figure"
    return f"{before} → {after}: {sp}, explained by {explained_by or 'nothing single'}."


# --- perfetto ----------------------------------------------------------------------------------------


def annotated_caption(gaps: int) -> str:
    return (f"The trace with an added track of its {gaps:,} idle gaps, named by cause with their evidence, "
            "for ui.perfetto.dev or chrome://tracing.")


# --- what-if -----------------------------------------------------------------------------------------


def whatif_caption(baseline_ns: float, replay_ns: float, gpu_span_ns: float | None = None) -> str:
    err = (replay_ns - baseline_ns) / baseline_ns * 100 if baseline_ns else 0.0
    gpu = f" (the report's GPU span, first to last GPU activity, is {duration_ns(gpu_span_ns)})" \
        if gpu_span_ns else ""
    return (f"Traced span, host and GPU: {duration_ns(baseline_ns)}, the baseline of every prediction here{gpu}; "
            f"replaying the unchanged dependency graph gives {duration_ns(replay_ns)} ({err:+.1f}%), which is how "
            "far to trust the predictions.")


def lever_line(lever: str, predicted_ns: float, ratio: float, saving_ns: float, baseline_ns: float) -> str:
    return (f"{lever}: {duration_ns(predicted_ns)} predicted, {ratio:.2f} of the traced span "
            f"({saving_pct(saving_ns, baseline_ns)})")


def traced_span_label(baseline_ns: float) -> str:
    return f"traced {duration_ns(baseline_ns)}"


def measured_timeline_title(baseline_ns: float) -> str:
    return f"measured: GPU activities as traced (traced span {duration_ns(baseline_ns)})"


def predicted_timeline_title(lever: str, predicted_ns: float) -> str:
    return f"predicted under {lever} (span {duration_ns(predicted_ns)})"


def whatif_timeline_caption(activities: int, binned: bool, bins: int, limit: int) -> str:
    how = (f"shown as busy shares in {bins} bins (more than {limit:,})" if binned else "each drawn")
    return (f"{activities:,} GPU activities, {how}; the predicted times are the replay's own, on the same time axis "
            "as the measured ones.")


def no_whatif() -> str:
    return "No GPU timeline in this trace: the what-if replay needs GPU activity (ProfilerActivity.CUDA)."


# --- drills and predictions --------------------------------------------------------------------------


def drill_label(drill_id: str, title: str) -> str:
    return f"{drill_id}  {title}"


def drill_about(lesson: str, kind: str, source: str) -> str:
    return f"Lesson: {lesson}. Kind: {kind.replace('_', ' ')}. Trace: {source}."


def drill_timeline_caption(name: str) -> str:
    return (f"{name}: the lanes as traced, the idle gaps left unmarked (their causes are what the drill may ask; "
            "the grade quotes the evidence).")


def answer_not_a_number(part: str, text: str) -> str:
    return f"{part} must be a number, got {text!r}"


def part_feedback(part: str, score: float, weight: float, feedback: str) -> str:
    return f"{part}: {score:.2f} × {weight:.2f}. {feedback}"


def attempt_recorded(attempt: int, path) -> str:
    return f"Attempt {attempt} recorded in {path}."


def no_predictions(path) -> str:
    return (f"No predictions in {path} yet: record one with tracetriage predict QUANTITY VALUE --why TEXT "
            "--trace PATH.")


def calibration_caption(plotted: int, total: int) -> str:
    return (f"{plotted} of {total} predictions measured and plotted: predicted against measured, log-log; "
            "the dashed line is a perfect prediction, the grey band within 2× of it. Quantities have their own units.")
