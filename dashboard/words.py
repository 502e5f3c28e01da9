"""Every sentence with a number that the dashboard itself composes (to fold into analyzers.voice).

The five lines, the diff's lines and the first experiments are the analyzers' own
text and are shown as they are; what is here are the dashboard's captions, tooltips
and feedback. Text that carries trace strings goes to the page through `plain()`.
"""
from __future__ import annotations

import re

CAUSE_WORDS = {"launch_overhead": "launch overhead", "host_work": "host work", "synchronization": "synchronization",
               "data_transfer": "data transfer", "other": "other"}

_MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$&:])")


def plain(text: str) -> str:
    """Text shown through st.markdown as the characters it holds: no markup, no HTML, no links."""
    return _MARKDOWN_SPECIALS.sub(r"\\\1", str(text))


def duration(us: float) -> str:
    us = float(us)
    if abs(us) >= 1e6:
        return f"{us / 1e6:.2f} s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.1f} µs"


def cause(c: str | None) -> str:
    return CAUSE_WORDS.get(c or "", c or "none")


# --- library ------------------------------------------------------------------------------

def upload_too_large(name: str, size_bytes: int, cap_mb: int) -> str:
    return (f"{name} is {size_bytes / 1e6:.0f} MB, over the {cap_mb} MB upload limit; start the dashboard with "
            f"TRACETRIAGE_UPLOAD_MB set higher, or pass the file on the command line")


def trace_error(message: str) -> str:
    return f"error: {message}"


def loaded(name: str, events: int, device: str) -> str:
    return f"Loaded {name}: {events:,} events on {device}."


def sample_about(about: str, cause_label: str | None, regime: str | None) -> str:
    built = ", ".join(x for x in (f"idle: {cause(cause_label)}" if cause_label else "",
                                  f"regime: {regime}" if regime else "") if x)
    return f"{about} ({built})" if built else about


# --- report -------------------------------------------------------------------------------

def cause_evidence(c: str, gaps: int, median_gap_us: float, max_gap_us: float, names: list[str]) -> str:
    if gaps == 0:
        return "no gaps"
    s = f"{gaps:,} gap{'s' if gaps != 1 else ''}, median {duration(median_gap_us)}, longest {duration(max_gap_us)}"
    return s + (f"; {', '.join(names)}" if names else "")


def phase_summary(ttft_us: float, per_token_us: float, steps: int, tokens_per_prefill: int) -> str:
    return (f"Time to first token {duration(ttft_us)}; {duration(per_token_us)} per token over {steps} decode steps "
            f"({tokens_per_prefill} per prefill).")


def phase_detail(label: str, regime: str, idle_share: float, idle_dominant: str | None, median_wall_us: float) -> str:
    idle = f"idle {100 * idle_share:.0f}%" + (f", mostly {cause(idle_dominant)}" if idle_dominant else "")
    return f"{label}: {regime}-bound, {idle}, median {duration(median_wall_us)} per instance"


# --- timeline -----------------------------------------------------------------------------

def window_caption(events: int, lo_us: float, hi_us: float, limit: int, bins: int | None) -> str:
    span = f"{duration(lo_us)} to {duration(hi_us)}"
    if bins is not None:
        return (f"{events:,} events from {span}: shown as busy shares in {bins} bins. Drag across the chart to zoom; "
                f"each event is drawn once the window holds {limit:,} or fewer.")
    return f"{events:,} events from {span}, each drawn. Drag across the chart to zoom further."


def bin_tooltip(lane: str, busy: float) -> str:
    return f"{lane}: busy {100 * busy:.0f}% of the bin"


def idle_bin_tooltip(idle: float, shares: dict[str, float]) -> str:
    parts = ", ".join(f"{cause(c)} {100 * v:.0f}%" for c, v in sorted(shares.items(), key=lambda kv: -kv[1]) if v > 0)
    return f"idle {100 * idle:.0f}% of the bin: {parts}"


def gap_evidence(c: str, dur_us: float, host_call: str, called_from: str, next_name: str) -> str:
    s = f"{cause(c)} gap of {duration(dur_us)}"
    if host_call:
        s += f"; the host was in {host_call}" + (f" (from {called_from})" if called_from else "")
    if next_name:
        s += f"; ended by {next_name}"
    return s


# --- roofline -----------------------------------------------------------------------------

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


# --- diff ---------------------------------------------------------------------------------

def diff_headline(before: str, after: str, speedup: float | None, explained_by: str) -> str:
    sp = f"{speedup:.2f}× speedup" if speedup else "no speedup figure"
    return f"{before} → {after}: {sp}, explained by {explained_by or 'nothing single'}."


# --- perfetto -----------------------------------------------------------------------------

def annotated_caption(gaps: int) -> str:
    return (f"The trace with an added track of its {gaps:,} idle gaps, named by cause with their evidence, "
            "for ui.perfetto.dev or chrome://tracing.")
