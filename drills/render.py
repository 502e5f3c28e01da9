"""The timeline in a terminal: one row per host thread and stream, and an idle row marked by cause.

Each column is a slice of the GPU span; a lane's cell is full when its bars cover most of the slice,
a thin mark when they touch it. The idle row shows, per slice, the cause with the most idle time by its
record's mark (tracetriage.analyzers.voice.causes: L launch overhead, H host work, S synchronization, T data
transfer, O other).
"""
from __future__ import annotations

import numpy as np
from rich.text import Text

from tracetriage.analyzers.model.units import duration_us
from tracetriage.analyzers.voice.causes import CAUSE_SPECS
from tracetriage.drills.evidence import Lanes
from tracetriage.drills.words import timeline_legend

CAUSE_MARK = {c.value: (s.mark, s.mark_style) for c, s in CAUSE_SPECS.items()}   # each cause's record's mark
COPY_KINDS = ("memcpy", "memset")
KIND_STYLE = {"kernel": "green", "memcpy": "cyan", "memset": "cyan", "cpu_op": "blue", "launch call": "blue",
              "range": "white"}


def _coverage(spans: list[tuple[float, float]], lo: float, hi: float, width: int) -> np.ndarray:
    cov = np.zeros(width)
    step = (hi - lo) / width
    for s, e in spans:
        s, e = max(s, lo), min(e, hi)
        if e <= s:
            continue
        a, b = int((s - lo) / step), min(int((e - lo) / step), width - 1)
        for c in range(a, b + 1):
            c_lo = lo + c * step
            cov[c] += min(e, c_lo + step) - max(s, c_lo)
    return cov / step


def draw(t: Lanes, width: int = 96, window: tuple[float, float] | None = None, title: str = "",
         cause_marks: bool = True) -> Text:
    """The lanes over the window (µs from the first GPU activity). Without cause_marks the idle row
    says only where the GPU idles (a drill must not give its answer away)."""
    lo, hi = window or (0.0, t.span_us)
    hi = max(hi, lo + 1e-3)
    name_w = max([len(n) + len(" copies") for n in t.lanes] + [8])
    out = Text()
    if title:
        out.append(title + "\n", style="bold")
    pad = " " * max(1, width - len(duration_us(lo)) - len(duration_us(hi)))
    out.append(f"{'':{name_w}} |{duration_us(lo)}{pad}{duration_us(hi)}|\n", style="dim")
    by_lane: dict[int, list] = {}
    for lane, s, e, kind in t.bars:
        by_lane.setdefault(lane, []).append((s, e, kind))
    rows = []        # (row name, bars, style): a stream's copies get a row of their own, in the copy colour
    for i, name in enumerate(t.lanes):
        bars = by_lane.get(i, [])
        if "ranges" in name:
            continue
        copies = [b for b in bars if b[2] in COPY_KINDS]
        rest = [b for b in bars if b[2] not in COPY_KINDS]
        if copies and rest:
            rows += [(name, rest, None), (f"{name} copies", copies, KIND_STYLE["memcpy"])]
        else:
            rows.append((name, bars, None))
    for name, bars, style in rows:
        cov = _coverage([(s, e) for s, e, _ in bars], lo, hi, width)
        kinds = {k for _, _, k in bars}
        style = style or KIND_STYLE.get(next(iter(kinds)) if len(kinds) == 1 else
                                        ("kernel" if "kernel" in kinds else "cpu_op"))
        out.append(f"{name:{name_w}} |")
        out.append("".join("█" if c >= 0.5 else ("▌" if c > 0.05 else ("▏" if c > 0 else " ")) for c in cov),
                   style=style)
        out.append("|\n")
    out.append(f"{'gpu idle':{name_w}} |")
    per_cause = {c: _coverage([(s, e) for s, e, cc in t.gaps if cc == c], lo, hi, width) for c in CAUSE_MARK}
    stack = np.vstack([per_cause[c] for c in CAUSE_MARK])
    for col in range(width):
        j = int(np.argmax(stack[:, col]))
        if stack[j, col] <= 0.02:
            out.append(" ")
        elif not cause_marks:
            out.append("░" if stack[:, col].sum() >= 0.3 else "·", style="bold")
        else:
            mark, style = CAUSE_MARK[list(CAUSE_MARK)[j]]
            out.append(mark if stack[j, col] >= 0.3 else mark.lower(), style=style)
    out.append("|\n")
    legend = timeline_legend([(m, c) for c, (m, _) in CAUSE_MARK.items()] if cause_marks else None)
    out.append(f"{'':{name_w}}  {legend}\n", style="dim")
    return out


def zoom_window(t: Lanes, cause: str | None, slices: int = 96) -> tuple[float, float] | None:
    """A window around the first gaps of a cause, wide enough to show a few of them with their neighbours."""
    gaps = [(s, e) for s, e, c in t.gaps if c == cause]
    if not gaps:
        return None
    med = float(np.median([e - s for s, e in gaps]))
    w = max(30 * med, 50.0)
    start = max(0.0, gaps[min(2, len(gaps) - 1)][0] - w / 4)
    return start, min(t.span_us, start + w)


def large_gaps(t: Lanes, n: int = 5) -> list[tuple[float, float, str]]:
    """The n longest idle gaps, in time order: (start_us, length_us, the host call the host was in)."""
    calls = t.gap_calls or [""] * len(t.gaps)
    big = sorted(zip(t.gaps, calls), key=lambda gc: -(gc[0][1] - gc[0][0]))[:n]
    return sorted(((s, e - s, c) for (s, e, _), c in big), key=lambda g: g[0])


def idle_by_call(t: Lanes, n: int = 6) -> list[tuple[str, float, float]]:
    """The GPU's idle time summed by the host call the host was in during each gap, most first: (call, idle µs,
    share of the span). A cause's share is for the reader to find: the call says what the host was doing."""
    calls = t.gap_calls or [""] * len(t.gaps)
    cs = np.array([s for _, s, _, k in t.bars if k in COPY_KINDS], np.float64)
    ce = np.array([e for _, _, e, k in t.bars if k in COPY_KINDS], np.float64)
    by: dict[str, float] = {}
    for (s, e, _), c in zip(t.gaps, calls):
        # a gap mostly covered by a copy on the device: the copy is what sits around it, whatever the host does
        covered = float(np.clip(np.minimum(e, ce) - np.maximum(s, cs), 0, None).sum()) if len(cs) else 0.0
        key = COPY_RUNNING if e > s and covered >= 0.5 * (e - s) else c
        by[key] = by.get(key, 0.0) + e - s
    rows = sorted(by.items(), key=lambda kv: -kv[1])[:n]
    return [(c, us, us / t.span_us if t.span_us else 0.0) for c, us in rows]


COPY_RUNNING = "(a copy running on the device)"
