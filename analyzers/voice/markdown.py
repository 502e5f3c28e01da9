"""Markdown for pull requests and agents (`--format markdown`): the lines first, then a table per
section, short enough for a PR comment (a few kB: the top rows of each table only).
"""
from __future__ import annotations

from pathlib import Path

from tracetriage.analyzers.model.units import (
    duration_ns,
    duration_us,
    integer,
    ratio,
    saving_pct,
    share,
    shares_of_a_whole,
    signed,
    signed_us,
    size,
)
from tracetriage.analyzers.model.verdicts import CAUSES
from tracetriage.analyzers.voice.analysis import Analysis
from tracetriage.analyzers.voice.common import CAUSE_WORDS, evidence_phrase, op_words
from tracetriage.analyzers.voice.diff import diff_lines
from tracetriage.analyzers.voice.health import health_line
from tracetriage.analyzers.voice.report import analysis_caveats, five_lines
from tracetriage.analyzers.voice.sources import fused_words, source_words
from tracetriage.analyzers.voice.whatif import assumption

ROWS = 5          # rows per table: a PR comment, not a dump (the --json has them all)


def cell(text) -> str:
    """A table cell: pipes escaped, newlines folded."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def code(name: str) -> str:
    return f"`{name.replace('`', '')}`"


def table(head: list[str], rows: list[list], right: set[int] = frozenset()) -> list[str]:
    if not rows:
        return []
    align = ["---:" if i in right else "---" for i in range(len(head))]
    return ["| " + " | ".join(head) + " |", "| " + " | ".join(align) + " |",
            *("| " + " | ".join(cell(c) for c in r) + " |" for r in rows), ""]


def _lines(lines: list[str]) -> list[str]:
    """'Idle: ...' -> '**Idle**: ...', one per line."""
    out = []
    for line in lines:
        head, sep, rest = line.partition(": ")
        out.append(f"**{head}**: {rest}" if sep and " " not in head else line)
    return [x + "  " for x in out[:-1]] + out[-1:] + [""]


def report_markdown(a: Analysis, gate_line: str | None = None) -> str:
    name = Path(a.trace.path).name
    out = [f"### tracetriage report: {code(name)}", ""]
    if gate_line:
        out += [f"> **{gate_line}**", ""]
    out += _lines(five_lines(a))
    src = a.source_lines
    hot = a.hotspots if a.devices else a.host_only.hotspots
    where = src is not None and any(src.hotspots.get(h.name) for h in hot)
    rows = []
    for h in hot[:ROWS]:
        what = fused_words(a.fused_kernels[h.name]) if h.name in a.fused_kernels else ""
        said = op_words(h.name, a.trace.device_name())
        shown = code(h.name) if said == h.name else f"{said.split(' (')[0]} ({code(h.name)})"
        row = [shown + (f" ({what})" if what else ""), duration_us(h.device_us), share(h.share),
               integer(h.calls)]
        if where:
            lines = src.hotspots.get(h.name, ())
            row.append(source_words(lines[0]) if lines else "")
        rows.append(row)
    out += table(["hotspot", "device time" if a.devices else "host time", "share", "calls"]
                 + (["where in your code"] if where else []), rows, {1, 2, 3})
    if a.devices and a.idle_ns > 0:
        ev = a.evidence
        idle_rows = []
        present = [c for c in sorted(CAUSES, key=lambda c: -a.by_cause_ns[c]) if a.by_cause_ns[c] > 0]
        # the same shares as the Idle line prints: they add up to its idle share
        _, pcts = shares_of_a_whole(a.idle_share, [a.by_cause_ns[c] / a.span_ns for c in present])
        for c, pct in zip(present, pcts):
            at = src.idle.get(c, ()) if src else ()
            idle_rows.append([CAUSE_WORDS[c], duration_ns(a.by_cause_ns[c]), pct,
                              integer(ev[c].gaps), evidence_phrase(ev[c]) + (f"; in your code: {source_words(at[0])}"
                                                                     if at else "")])
        out += table(["idle cause", "time", "of the span", "gaps", "evidence"], idle_rows[:ROWS], {1, 2, 3})
    if a.lever_choices:
        out += table(["what-if lever", "predicted span", "change"],
                     [[code(c.lever) + (f" ({code(c.only)})" if c.only else ""), duration_ns(c.predicted_ns),
                       saving_pct(c.saving_ns, c.baseline_ns)] for c in a.lever_choices[:ROWS]], {1, 2})
    cav = analysis_caveats(a)
    health = health_line(a.health)
    if health:
        out += [f"- **{health}**"] + ([] if cav else [""])
    if cav:
        out += [f"- Caveat: {c}." for c in cav[:ROWS]] + [""]
    return "\n".join(out).rstrip() + "\n"


def diff_markdown(d, gate_line: str | None = None) -> str:
    b, a = d.before, d.after
    cb, ca = d.compared_before, d.compared_after   # the mean steps where both traces have steps, else the whole
    out = [f"### tracetriage diff: {code(b.name)} → {code(a.name)}", ""]
    if gate_line:
        out += [f"> **{gate_line}**", ""]
    out += _lines(diff_lines(d))
    span_b, span_a = d.span_us
    rows = [["mean profiled step" if d.per_step else "GPU span", duration_us(span_b), duration_us(span_a),
             signed_us(span_a - span_b)],
            ["kernel busy", duration_us(cb.kernel_busy_us), duration_us(ca.kernel_busy_us),
             signed_us(ca.kernel_busy_us - cb.kernel_busy_us)],
            ["idle", f"{duration_us(cb.idle_us)} ({share(cb.idle_share)})",
             f"{duration_us(ca.idle_us)} ({share(ca.idle_share)})", signed_us(ca.idle_us - cb.idle_us)]]
    rows += [[f"idle: {CAUSE_WORDS[c]}", duration_us(cb.idle_by_cause_us[c]),
              duration_us(ca.idle_by_cause_us[c]), signed_us(x)] for c, x in d.idle_moved[:3]]
    rows.append(["launch calls", integer(cb.launch_calls), integer(ca.launch_calls),
                 signed(ca.launch_calls - cb.launch_calls)])
    rows.append(["kernels", integer(cb.kernels), integer(ca.kernels), signed(ca.kernels - cb.kernels)])
    if cb.bytes is not None and ca.bytes is not None:
        rows.append(["bytes", size(cb.bytes), size(ca.bytes),
                     ratio(d.byte_ratio, d.about_same(d.byte_ratio)) if d.byte_ratio else ""])
    rows.append(["regime", f"{b.regime}", f"{a.regime}", ""])
    out += table(["", "before", "after", "change"], rows, {1, 2, 3})
    return "\n".join(out).rstrip() + "\n"


def whatif_markdown(w) -> str:
    err = (w.replay_ns - w.baseline_ns) / w.baseline_ns * 100 if w.baseline_ns else 0.0
    out = [f"### tracetriage whatif: {code(Path(w.path).name)}", "",
           f"Traced span, host and GPU: {duration_ns(w.baseline_ns)}; the unchanged replay gives "
           f"{duration_ns(w.replay_ns)} ({signed(err, '.1f', '%')}). Each lever's predicted span, best first:", ""]
    out += table(["lever", "predicted span", "ratio", "saving", "assumes"],
                 [[code(p.lever), duration_ns(p.predicted_ns), f"{p.predicted_ratio:.2f}",
                   saving_pct(p.saving_ns, w.baseline_ns), assumption(p.assumption)] for p in w.levers], {1, 2, 3})
    return "\n".join(out).rstrip() + "\n"


def ranks_markdown(rr) -> str:
    """`report DIR --format markdown`: the ranks as one table (a pull request on a multi-GPU job wants to see
    them side by side), the straggler, then the worst rank's own five lines, as `ranks_lines` says them."""
    from tracetriage.analyzers.voice.common import cause_words
    from tracetriage.analyzers.voice.ranks import ranks_caveats, ranks_lines, straggler_line

    lines = ranks_lines(rr)
    out = ["### tracetriage report: ranks", "", lines[0], ""]
    waits = {w.rank: w.wait_ns for w in rr.peer_waits}
    rows = []
    for r in rr.rows:
        c = r.r.collectives
        rows.append([str(r.rank), share(r.r.idle_share), cause_words(r.r.dominant), duration_us(r.r.kernel_busy_us),
                     integer(c.calls), duration_ns(c.total_ns) if c.calls else "",
                     duration_ns(waits[r.rank]) if r.rank in waits else ""])
    out += table(["rank", "idle", "mostly", "kernels busy", "collective kernels", "collectives", "waiting for a peer"],
                 rows, {1, 3, 4, 5, 6})
    out += _lines([straggler_line(rr.straggler)])
    worst_at = next(i for i, s in enumerate(lines) if s.startswith("Rank ") and s.endswith(":"))
    out += [f"**{lines[worst_at].rstrip(':')}**", ""]
    out += _lines([s.strip() for s in lines[worst_at + 1:] if not s.startswith("Caveat: ")])
    out += [f"- Caveat: {c}." for c in ranks_caveats(rr)] + [""]
    return "\n".join(out).rstrip() + "\n"
