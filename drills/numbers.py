"""A number part read against its key: a number with its unit (tracetriage.drills.amounts), a range by its ends, two
values offered as a hedge, and the trace's other quantities it could be mistaken for (the keys' `confusable`).

    grade_number("0.79 ms", 0.75, "ms").score        # 1.0: within CLOSE
    grade_number("0.79 or 7.9 ms", 0.75, "ms").score # HEDGE_CREDIT: a hedge
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tracetriage.drills.amounts import Amount, amounts, dimension, in_unit, slip
from tracetriage.drills.hedges import leans

CLOSE, NEAR = 0.15, 2.0   # a number within 15% scores 1, within 2x NEAR_CREDIT
# a number off by 1.2-2x is a wrong number to a teacher (0 to 0.5 on the held-out sets: "5x counts kernels", a TTFT
# of 20 ms against 13.2): a quarter for being near, never enough to pass as right
NEAR_CREDIT = 0.25
RANGE_CREDIT = 0.5        # a range that holds the key ("0.6 to 0.9 ms"): not wrong, not committed; no cap
# A range whose both ends are right but that is wider than rounding ("0.7-0.8 ms", "50-55%", "between 1.0 and 1.2 ms"):
# right, still not one measurement; the blind teachers gave 0.5-0.8 on five sets (mean 0.7), and full marks only
# where the ends differ by rounding ("4.1-4.2 TB/s")
RIGHT_RANGE_CREDIT, RANGE_ROUNDING = 0.75, 1.05
# The right number first, another value offered after it as a possibility ("410 TFLOP/s (or ~600 GB/s if memory)",
# "26.7 ms, though maybe more like 14 ms if you only count kernel time", "1 FLOP/byte (maybe 2 if ...)"): 23 such
# answers on eight held-out sets were scored 0.5-0.85 by their teachers, 0.64 on average; it does not cap
NUMBER_LEAN_CREDIT = 0.6
SLIP_CREDIT = 0.5         # the right value in the wrong unit (a ×1000 slip): the physics is right, the unit not
# A hedge between the right answer and one other ("sync or launch overhead", "0.79 or 7.9 ms") is not the answer
# alone: it earns HEDGE_CREDIT, and below the grader's WRONG_BELOW it counts as a wrong answer for the decisive cap; a
# list of three or more options earns nothing. (Two teachers scoring held-out answers gave such a hedge 0.4 and 0.5.)
HEDGE_CREDIT = 0.4


def answer_text(ans) -> str:
    return " ".join(str(a) for a in ans) if isinstance(ans, list) else str(ans)


def score_number(said: float, key: float) -> float:
    if key in (None, 0) or said is None or said <= 0:
        return 0.0
    r = said / key
    if abs(r - 1) <= CLOSE:
        return 1.0
    return NEAR_CREDIT if 1 / NEAR <= r <= NEAR else 0.0


@dataclass(frozen=True)
class NumberGrade:
    score: float
    said: float | None        # in the key's unit
    slip: float | None        # the unit ladder's factor when the value slipped by it
    other_dim: str | None     # the dimension the answer's unit has, when it is not the key's
    confused: tuple | None = None   # (what it is, its value): the answer is another quantity of the trace
    hedged: tuple = ()        # the values offered ("0.79 or 7.9 ms"): a hedge, HEDGE_CREDIT when one is right
    half: bool = False        # half credit (within 2x, a unit slip): never right enough to lift a cap
    span: tuple | None = None   # (low, high) of a range the answer gives ("0.7 to 0.8 ms"), in the key's unit


# The words a sentence uses for a number part's own quantity (which of several numbers answers it).
PART_WORDS = {"ttft_ms": ("ttft", "first token", "prefill", "time to first"),
              "per_token_ms": ("per token", "per-token", "each token", "itl", "tpot", "inter-token", "decode",
                               "/token"),
              "floor_ms": ("floor",), "median_ms": ("median",), "spread_pct": ("spread",),
              "eager_bytes": ("eager", "unfused"), "fused_bytes": ("fused",),
              "tflops_small": ("small",), "tflops_large": ("large", "big"),
              # the drills ask the spans' ratio; a ratio said of kernel time or bytes is another quantity
              "speedup": ("span", "wall", "end to end", "end-to-end", "overall")}
# The mean given for the median (or the median for the mean) of the same samples: the right samples read with the
# wrong statistic, which teachers scored 0 to 0.4 ("close, wrong quantity"): near, never passing as right
OTHER_STATISTIC = re.compile(r"the (?:mean|median)\b")
OTHER_STATISTIC_CREDIT = NEAR_CREDIT
ROUNDING = 0.02     # two values an answer offers that differ by more than this are two answers, not one rounded
WORD_HEDGE = re.compile(r"\bor\b|\beither\b|\bmaybe\b|\bperhaps\b|\?", re.I)
NUMBER_HEDGE = re.compile(r"\bor\b|\beither\b|\bmaybe\b|\bperhaps\b|/|\?", re.I)


def grade_number(ans, key: float, unit: str, confusable: tuple = (), own_words: tuple = (),
                 also: tuple = ()) -> NumberGrade:
    """A number, or a string with a number and its unit ("0.79 PFLOP/s"), against a key in `unit`. `confusable`:
    the trace's other quantities it could be mistaken for ((what it is, value in `unit`): TTFT for the per-token
    time, the peak for the achieved rate): an answer that is one of them, clearly nearer it than the key, is that
    quantity and scores 0, however close the two lie. `own_words`: the words that name the part's quantity; of
    several numbers, the one whose clause says them is the answer. `also`: other values that are right too (the
    mean beside the median): a range ("17-18 ms", "between 100 and 170 MB") whose ends are both right is right; one
    that only holds a right value, within 2x end to end, earns RANGE_CREDIT; a wider one is no answer."""
    if isinstance(ans, (int, float)) and not isinstance(ans, bool):
        found = [Amount(float(ans), None, float(ans), "", 0, 0, "")]
        text = ""
    else:
        text = answer_text(ans)
        found = amounts(text)
    if not found:
        return NumberGrade(0.0, None, None, None)
    found, high_end = range_ends(text, found)
    dim = dimension(unit) if unit else None
    usable = [a for a in found if a.dim is None or a.dim == dim]
    if not usable:
        return NumberGrade(0.0, None, None, found[0].dim)
    named = [x for x in usable if own_words and any(re.search(rf"(?<![a-z]){re.escape(w)}", clause_around(text, x))
                                                    for w in own_words)] if len(usable) > 1 else []
    if len(named) == 1:
        usable = named      # "TTFT 18.6 ms, then 17.6 ms per token": the per-token part reads the per-token number
    a = usable[0]
    said = in_unit(a, unit) if unit else a.value
    offered = _offered(text, usable, unit)
    right = [k for k in (key, *also) if k]
    if len(offered) > 1 and not all(any(score_number(v, k) == 1.0 and _confused(v, k, confusable) is None
                                        for k in right) for v in offered):
        # ("10 or 11%" of a 10.8% key is no hedge); two values, one of them right: a hedge
        one_right = len(offered) == 2 and any(score_number(v, k) == 1.0 and _confused(v, k, confusable) is None
                                              for v in offered for k in right)
        first_right = any(score_number(offered[0], k) == 1.0 and _confused(offered[0], k, confusable) is None
                          for k in right)
        if one_right and first_right and leans(text):
            return NumberGrade(NUMBER_LEAN_CREDIT, said, None, None, hedged=tuple(offered))
        return NumberGrade(HEDGE_CREDIT if one_right else 0.0, said, None, None, hedged=tuple(offered), half=True)
    if a.start in high_end:
        b = high_end[a.start]
        return _range_grade(sorted((said, in_unit(b, unit) if unit else b.value)), (key, *also), confusable)
    mistaken = _confused(said, key, confusable)
    if mistaken is not None:
        near = OTHER_STATISTIC_CREDIT if OTHER_STATISTIC.match(mistaken[0]) else 0.0
        return NumberGrade(near, said, None, None, confused=mistaken, half=near > 0)
    s = score_number(said, key)
    if s == NEAR_CREDIT and text and rounds_to(text[a.start:a.end], said, key):
        s = 1.0
    if s == 1.0 and len(named) != 1:     # a number its clause names as the part's quantity is chosen, not offered
        alt = later_alternative(text, a, [key, *also], unit)
        if alt is not None:
            return NumberGrade(NUMBER_LEAN_CREDIT, said, None, None, hedged=(said, alt))
    if s == 0:
        f = slip(said, key, dim)
        if f is not None:
            return NumberGrade(SLIP_CREDIT, said, f, None, half=True)
    return NumberGrade(s, said, None, None, half=0 < s < 1)


RANGE_JOIN = re.compile(r"\s*(?:-|–|—|to|until)\s*(?:~|about|around|roughly)?\s*", re.I)
RANGE_AND = re.compile(r"\s*and\s*(?:~|about|around|roughly)?\s*", re.I)
RANGE_OPEN = re.compile(r"\b(?:between|from)\s*(?:~|about|around|roughly)?\s*$", re.I)


def range_ends(text: str, found: list[Amount]) -> tuple[list[Amount], dict[int, Amount]]:
    """The amounts with each range's high end taken out ("0.7 to 0.8 ms", "17-18 ms", "between 100 and 170 MB"), and
    each range's high end by where its low end starts. A bare end takes the other end's unit ("100 and 170 MB")."""
    out: list[Amount] = []
    high: dict[int, Amount] = {}
    i = 0
    while i < len(found):
        a = found[i]
        b = found[i + 1] if i + 1 < len(found) else None
        between = text[a.end:b.start] if b is not None else ""
        joined = b is not None and (RANGE_JOIN.fullmatch(between) is not None or
                                    (RANGE_AND.fullmatch(between) is not None and
                                     RANGE_OPEN.search(text[max(0, a.start - 24):a.start]) is not None))
        if b is not None and joined and (a.dim is None or b.dim is None or a.dim == b.dim):
            a, b = _unit_of(a, b), _unit_of(b, a)
            high[a.start] = b
            out.append(a)
            i += 2
            continue
        out.append(a)
        i += 1
    return out, high


def _unit_of(a: Amount, other: Amount) -> Amount:
    """A bare end of a range in the other end's unit."""
    from dataclasses import replace

    from tracetriage.drills.amounts import UNITS

    if a.dim is not None or other.dim is None:
        return a
    return replace(a, dim=other.dim, base=a.value * UNITS[other.unit.lower()][1], unit=other.unit)


def _confused(said: float, key: float, confusable: tuple) -> tuple | None:
    """The trace's other quantity (what, value) the number is: within 15% of it and clearly nearer it than the key."""
    for what, value in confusable:
        if value and score_number(said, value) == 1.0 and abs(said - value) < abs(said - key) / 2:
            return what, value
    return None


def _range_grade(ends: list, accepted: tuple, confusable: tuple) -> NumberGrade:
    lo, hi = ends
    if lo is None or hi is None:
        return NumberGrade(0.0, None, None, None)
    right = [k for k in accepted if k]
    if all(any(score_number(v, k) == 1.0 and _confused(v, k, confusable) is None for k in right) for v in (lo, hi)):
        credit = 1.0 if hi <= lo * RANGE_ROUNDING else RIGHT_RANGE_CREDIT
        return NumberGrade(credit, (lo + hi) / 2, None, None, span=(lo, hi))
    holds = any(lo <= k * (1 + CLOSE) and hi >= k * (1 - CLOSE) for k in right)
    if holds and lo > 0 and hi <= NEAR * lo:
        return NumberGrade(RANGE_CREDIT, (lo + hi) / 2, None, None, span=(lo, hi))
    return NumberGrade(0.0, (lo + hi) / 2, None, None, span=(lo, hi))


def _offered(text: str, usable: list, unit: str) -> list[float]:
    """The values an answer offers as alternatives: two amounts of the key's dimension joined by "or", "/", "either"
    ("0.79 or 7.9 ms"), that differ by more than rounding."""
    vals = [in_unit(usable[0], unit) if unit else usable[0].value]
    for prev, nxt in zip(usable, usable[1:]):
        between = text[prev.end:nxt.start]
        v = in_unit(nxt, unit) if unit else nxt.value
        if v is None or len(between) > 24 or not NUMBER_HEDGE.search(between) or re.search(r"[.;:]\s", between):
            break
        if not WORD_HEDGE.search(between) and not (prev.unit and nxt.unit):
            break      # "5.68/20 ms" is a time against its target; "0.79 ms / 0.70 ms" two answers
        if all(abs(v - x) > ROUNDING * max(abs(x), 1e-12) for x in vals):
            vals.append(v)
    return vals


def clause_around(text: str, a: Amount) -> str:
    lo = max([m.end() for m in re.finditer(r"[;,:]|\.\s|\bbut\b|\band\b", text[:a.start])] + [0])
    nxt = re.search(r"[;,:]|\.\s|\bbut\b|\band\b", text[a.end:])
    hi = a.end + nxt.start() if nxt else len(text)
    return text[lo:hi].lower()


# What sets a later value off as an alternative to the lead: "or", a modal, "more like", "closer to", "up to" in the
# words just before it ("(or ~600 GB/s", ", maybe closer to 4-5x", ", though the limits would allow 100%")
OFFERS = re.compile(r"\b(?:or|maybe|perhaps|possibly|probably|could|might|would|more like|closer to|up to)\b[^.;:]*$",
                    re.I)
OFFER_WINDOW = 40


def later_alternative(text: str, lead: Amount, right: list, unit: str) -> float | str | None:
    """A value offered after the lead as a possibility, that is not itself right (a value of the key's dimension off
    by more than 15%, or the same quantity in another dimension: "or ~600 GB/s if memory" after TFLOP/s): the value
    (in the key's unit) or the amount as written; None when there is none. Numbers that only explain the lead
    ("(2.7 GFLOP in 39.6 us)", "(median 2.96 ms)") have no offering word before them."""
    if not text:
        return None
    dim = dimension(unit) if unit else None
    prev_end = lead.end
    for b in amounts(text):
        if b.start < lead.end:
            continue
        before = text[max(prev_end, b.start - OFFER_WINDOW):b.start]
        prev_end = b.end
        if not OFFERS.search(before):
            continue
        if b.dim is not None and dim is not None and b.dim != dim:
            if b.dim in RATE_DIMS and dim in RATE_DIMS:
                return text[b.start:b.end]     # the rate read in the other roof's unit
            continue
        v = in_unit(b, unit) if unit and b.dim is not None else b.value
        if v is not None and v > 0 and not any(k and score_number(v, k) == 1.0 for k in right):
            return v
    return None


RATE_DIMS = frozenset({"flops", "bandwidth"})


# A number written to one significant figure ("~1 GB/s" for 0.8 GB/s, "2 ms" for 1.6 ms) says its value to that
# precision: right when the key rounds to it there. Blind teachers of three sets gave "~1 GB/s" against 0.8 GB/s
# 0.8-1.0 six times; the ratio stays within ROUNDED_RATIO, so a loose digit cannot stretch further (0.5 is not "1").
ROUNDED_RATIO = 1.25
_DIGITS = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+]?\.\d+")


def rounds_to(written: str, said: float, key: float) -> bool:
    """The answer's number, written with one significant figure, is the key rounded to that figure's place."""
    m = _DIGITS.match(written)
    if m is None or not key or said <= 0 or max(said / key, key / said) > ROUNDED_RATIO:
        return False
    digits = m.group().replace(",", "").lstrip("+-")
    significant = digits.replace(".", "").lstrip("0")
    if len(significant) != 1:
        return False
    shown = float(digits)
    places = len(digits.split(".")[1]) if "." in digits else 0
    key_as_written = key * shown / said        # the key in the unit the answer wrote
    return round(key_as_written, places) == shown
