"""The notebook's words: an analysis, a diff and a what-if as a notebook cell shows them.

Text for `repr()`, Markdown, and HTML with the idle split as one stacked bar (a <div> per cause,
its width the cause's share of the span, its colour the cause's, as the dashboard draws it:
tracetriage.analyzers.voice.causes). Every string from the trace is escaped.
"""
from __future__ import annotations

import html

from tracetriage.analyzers.model.units import a_or_an, duration_ns, saving_pct, share
from tracetriage.analyzers.model.verdicts import CAUSES
from tracetriage.analyzers.voice.analysis import Analysis
from tracetriage.analyzers.voice.causes import CAUSE_SPECS
from tracetriage.analyzers.voice.common import CAUSE_WORDS
from tracetriage.analyzers.voice.diff import diff_lines
from tracetriage.analyzers.voice.health import health_line
from tracetriage.analyzers.voice.report import analysis_caveats, five_lines
from tracetriage.analyzers.voice.whatif import whatif_table

__all__ = ["analysis_html", "analysis_markdown", "analysis_text", "diff_lines", "diff_text", "lines_html",
           "whatif_html", "whatif_text"]



def _health(a: Analysis) -> list[str]:
    line = health_line(getattr(a, "health", None))
    return [line] if line else []


def analysis_text(a: Analysis) -> str:
    return "\n".join(five_lines(a) + _health(a) + [f"Caveat: {c}." for c in analysis_caveats(a)])


def analysis_markdown(a: Analysis) -> str:
    return "\n\n".join(five_lines(a) + [f"**{x}**" for x in _health(a)]
                       + [f"*Caveat: {c}.*" for c in analysis_caveats(a)])


def idle_bar_html(a: Analysis) -> str:
    """The span as one bar: kernels busy, then each idle cause by its share; a legend under it."""
    if not a.span_ns:
        return ""
    parts = [("busy", a.kernel_busy_ns / a.span_ns, "#d0d0d0")]
    parts += [(CAUSE_WORDS[c], a.by_cause_ns.get(c, 0) / a.span_ns, CAUSE_SPECS[c].colour) for c in CAUSES]
    cells = "".join(f'<div title="{html.escape(n)} {share(x)}" style="width:{100 * x:.2f}%;background:{col}"></div>'
                    for n, x, col in parts if x > 0)
    legend = " · ".join(f'<span style="color:{col}">■</span> {html.escape(n)} {share(x)}'
                        for n, x, col in parts if x >= 0.005)
    return (f'<div style="display:flex;height:14px;width:100%;max-width:720px;border:1px solid #999">{cells}</div>'
            f'<div style="font-size:85%;margin:2px 0 8px">{legend} (of {a_or_an(duration_ns(a.span_ns))} span)</div>')


def lines_html(lines: list[str]) -> str:
    return "".join(f"<p style='margin:2px 0'>{html.escape(x)}</p>" for x in lines)


def analysis_html(a: Analysis) -> str:
    caveats = [f"Caveat: {c}." for c in analysis_caveats(a)]
    return (idle_bar_html(a) if a.devices else "") + lines_html(five_lines(a) + _health(a)) + \
        "".join(f"<p style='margin:2px 0;font-size:85%'><i>{html.escape(c)}</i></p>" for c in caveats)


def diff_text(d) -> str:
    return "\n".join(diff_lines(d))


def whatif_text(w) -> str:
    return whatif_table(w)


def whatif_html(w) -> str:
    rows = "".join(f"<tr><td>{html.escape(p.lever)}</td><td>{duration_ns(p.predicted_ns)}</td>"
                   f"<td>{p.predicted_ratio:.2f}</td><td>{saving_pct(p.saving_ns, w.baseline_ns)}</td></tr>"
                   for p in w.levers)
    return (f"<p>Traced span {duration_ns(w.baseline_ns)}; each lever's predicted span, best first:</p>"
            f"<table><tr><th>lever</th><th>predicted</th><th>ratio</th><th>saving</th></tr>{rows}</table>")
