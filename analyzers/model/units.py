"""Number formats: one format per kind of number, for every layer that writes one.

Durations ('89.3 µs', '6.52 ms', '52.2 ms', '1.16 s'), counts with thousands separators ('22,270'), bytes,
shares, ratios and speedups ('11.29×'), rates ('4,255 GB/s', '787 TFLOP/s'), and the article a number takes
('an 11.29× speedup', 'an 18.6 ms span'). No number has more than three decimals. The words around them
are the voice layer's; these are only the numbers.
"""
from __future__ import annotations

import re


def integer(n: float) -> str:
    """A count on its own, with thousands separators: '22,270' (a float count, e.g. per step, rounds)."""
    return f"{round(n):,}"


def count(n: int, one: str, many: str | None = None) -> str:
    """'1 event', '1,024 events'."""
    return f"{integer(n)} {one if n == 1 else (many or one + 's')}"


def duration_us(us: float) -> str:
    """One format for every duration: '89.3 µs', '6.52 ms', '52.2 ms', '3.21 s', '1,204.50 s'. Each unit
    ends where its rounding would write the next unit's first value ('1000.0 µs' is '1.00 ms')."""
    us = abs(us)
    if us == 0:
        return "0 µs"          # nothing, not a measured 0.0
    if us < 999.95:
        return f"{us:.1f} µs"
    if us < 9_995:
        return f"{us / 1e3:.2f} ms"
    if us < 999_950:
        return f"{us / 1e3:.1f} ms"
    return f"{us / 1e6:,.2f} s"


def duration_ns(ns: float) -> str:
    return duration_us(ns / 1e3)


def signed(x: float, fmt: str = ",.0f", unit: str = "") -> str:
    """A change with its sign, the minus the one minus sign every change is written with ('−600', '+1.2%'): Python's
    own '+' format writes a hyphen."""
    text = format(abs(x), fmt)
    if float(text.replace(",", "")) == 0:
        return f"0{unit}" if fmt.endswith(".0f") else f"{text}{unit}"
    return ("−" if x < 0 else "+") + text + unit


def signed_us(us: float) -> str:
    return ("−" if us < 0 else "+") + duration_us(us)


def size(n: float) -> str:
    """Bytes: '1.07 GB', '4.2 MB', '16.0 kB' (each unit from where the one below would round to 1000)."""
    if n >= 999.95e6:
        return f"{n / 1e9:,.2f} GB"
    if n >= 999.95e3:
        return f"{n / 1e6:.1f} MB"
    return f"{n / 1e3:.1f} kB"


def flop_count(n: float) -> str:
    """An amount of arithmetic as `size` writes bytes: '1.07 TFLOP', '4.2 GFLOP', '16.0 MFLOP', '512.0 FLOP'."""
    for scale, unit in ((1e12, "TFLOP"), (1e9, "GFLOP"), (1e6, "MFLOP"), (1e3, "kFLOP")):
        if n >= 999.95 * scale / 1e3:
            return f"{n / scale:,.2f} {unit}" if unit == "TFLOP" else f"{n / scale:.1f} {unit}"
    return f"{n:.1f} FLOP" if n else "0 FLOP"


def share(x: float) -> str:
    """A fraction as a whole percentage: '19%'; a share that is there but rounds to nothing is '<1%', never '0%'."""
    text = f"{100 * x:,.0f}%"
    return "<1%" if x > 0 and text == "0%" else text


def about(text: str) -> str:
    """'~' before an estimate's printed figure, none before one that already says its bound ('<1%', not '~<1%')."""
    return "" if text.startswith("<") else "~"


def shares_of_a_whole(total: float, parts: list[float]) -> tuple[str, list[str]]:
    """The total's share and its parts', rounded so that the parts printed add up to the total printed (19% idle is
    13 + 3 + 2 + 1, not 13 + 4 + 2 + 1). Each part rounds as `share` does; where they then miss the total's whole
    percent, the whole percent left over (or taken back) go to the parts after the largest, those that rounding
    moved furthest the wrong way first: the largest part keeps the figure every other sentence gives it (the Next's
    "13% of the span"). A part that is there but gets no whole percent is '<1%'."""
    whole = round(100 * total)
    raw = [100 * p for p in parts]
    shown = [round(r) for r in raw]
    big = max(range(len(raw)), key=lambda i: raw[i]) if raw else None
    rest = [i for i in range(len(raw)) if i != big]
    for _ in range(abs(whole - sum(shown))):
        up = whole > sum(shown)
        # the part whose rounding went furthest against the correction (down when adding, up when taking back)
        pick = [i for i in rest if up or shown[i] > 0]
        if not pick:
            pick = [big] if big is not None else []
        if not pick:
            break
        i = max(pick, key=lambda k: (raw[k] - shown[k]) if up else (shown[k] - raw[k]))
        shown[i] += 1 if up else -1
    texts = [("<1%" if p > 0 else "0%") if n == 0 else f"{n:,}%" for n, p in zip(shown, parts)]
    return share(total), texts


def small_share(x: float) -> str:
    """A share that may be a tiny fraction of a percent: '0.06%', '0.8%', '3%'; one too small for two decimals is
    'under 0.01%', never a '0.00%' that says nothing was there."""
    if 0 < x < 0.00005:
        return "under 0.01%"
    return f"{100 * x:.2f}%" if x < 0.001 else (f"{100 * x:.1f}%" if x < 0.01 else share(x))


def plural(n: int, word: str) -> str:
    """'1 gap', '21,919 gaps'."""
    return count(n, word)


def pct_of(achieved: float, peak: float) -> str:
    """A share of a peak; measured copy ceilings can sit a hair under what kernels reach."""
    return "at the ceiling" if achieved >= peak else f"{100 * achieved / peak:.0f}%"


def times(r: float) -> str:
    """A factor: '4.47×', '11.29×', '1,204.00×'."""
    return f"{r:,.2f}×"


def ratio(r: float, same: bool) -> str:
    """A ratio before/after as 'N× fewer', 'N× more', or 'about the same' (`same`: the caller's verdict)."""
    if same:
        return "about the same"
    return f"{times(r)} fewer" if r >= 1 else f"{times(1 / r)} more"


def speed(s: float) -> str:
    """'11.29× speedup', '1.25× slowdown'; with its article, `a_or_an(speed(s))`: 'an 11.29× speedup'."""
    return f"{times(s)} speedup" if s >= 1 else f"{times(1 / s)} slowdown"


def saving_pct(saving_ns: float, baseline_ns: float) -> str:
    """A predicted change of the span: '−24%' for a saving, '+3%' for a loss, '0%'."""
    pct = round(saving_ns / baseline_ns * 100) if baseline_ns else 0
    return "0%" if pct == 0 else (f"−{pct}%" if pct > 0 else f"+{-pct}%")


def num(x: float | None) -> str:
    """A measured figure: whole with separators from 100 ('1,365'), else three significant digits and at
    most three decimals ('37.2', '4.5', '0.052'); a figure too small for three decimals is 'under 0.001', never a
    '0' that states nothing was there."""
    if x is None:
        return "none"
    if 0 < x < 0.0005:   # (a tiny negative is rounding noise: "0")
        return "under 0.001"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{round(x, 3) + 0.0:.3g}"   # (+ 0.0: no '-0')


def gbps(x: float) -> str:
    """A bandwidth: '4,255 GB/s', '37.2 GB/s'."""
    return f"{num(x)} GB/s"


def tflops(x: float) -> str:
    """A compute rate: '787 TFLOP/s', '0.520 TFLOP/s'."""
    return f"{num(x)} TFLOP/s"


# Numbers said with a vowel: eight (8, 80-89, 800-899, 8,000 ...), eleven and eighteen (11, 18, 11,000, 18,500
# ...: the lead group before a thousands separator). 'a 110', 'a 1.8', 'a 0.8' (zero point eight).
_SAID_WITH_A_VOWEL = re.compile(r"^(?:8|1[18](?:,|\.|$))")


def article(number_text: str) -> str:
    """'a' or 'an' before a number as written (separators included): 'an' 8, 11, 18, 80, 808, 11,000, 18.6."""
    lead = number_text.lstrip("+")
    lead = re.match(r"[\d,.]*", lead).group(0)
    if "," in lead:   # '18,500': the group before the first separator is said first
        lead = lead.split(",")[0] + ","
    else:
        lead = lead.split(".")[0] + ("." if "." in lead else "")
    return "an" if _SAID_WITH_A_VOWEL.match(lead) else "a"


def a_or_an(text: str) -> str:
    """The text after its article: 'an 11.29× speedup', 'a 1.16 s GPU span', 'an 808 TFLOP/s peak'."""
    return f"{article(text)} {text}"
