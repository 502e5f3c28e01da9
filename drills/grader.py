"""Grading an answer file against a drill's stored key, part by part, with feedback from the trace.

    result = grade(bank.get("M02.04-c"), {"cause": "synchronization", ...})
    result.score     # 0..1: the weighted parts, capped when the decisive part is wrong

Each part is read on meaning (tracetriage.drills.meaning), the answer being its lead clause: a name part (cause, bound,
regime, phase) scores 1 when the answer asserts the key's class alone, 0.5 when it asserts it beside another, 0 when
it denies it or names another; a hedge between the key and one other ("A or B") earns HEDGE_CREDIT and caps as a
wrong answer, one that leans to the key ("A, or maybe B") LEAN_CREDIT and does not cap. A lever part scores 1 for
the report's Next (a plan of two fixes is fine, unless one is the lever that would waste the week: 0.5), 0.5 for a
fix that helps less, FUSION_FOR_LAUNCHES for fusion alone where the idle is launch gaps, LIST_CREDIT for a list of
three holding it. A number is read with its unit (tracetriage.drills.amounts): within 15% of the key 1, within 2x
NEAR_CREDIT, a slip by the unit ladder (ms for µs) 0.5 with the unit named, a range by its ends. A pattern needs its
size or what sits around the gaps (PATTERN_UNMEASURED without); evidence, numbers that decide the bound (DECIDED_BY).
A blank part scores 0. Feedback quotes the evidence
the analyzers found in the trace (tracetriage.drills.evidence; its sentences are tracetriage.analyzers.voice).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from tracetriage.analyzers.model import verdicts
from tracetriage.drills import evidence
from tracetriage.drills import words as words
from tracetriage.drills.amounts import Amount, amounts, dimension, in_unit
from tracetriage.drills.bank import NUMBER, Drill, key_of
from tracetriage.drills.hedges import DOUBT_CREDIT, LEAN_CREDIT, LIST_CREDIT, doubted, leans, offers_later
from tracetriage.drills.ladder.grading import LadderParts
from tracetriage.drills.ladder.grading import expected as ladder_expected
from tracetriage.drills.ladder.parts import KINDS as LADDER_KINDS
from tracetriage.drills.launch_depth import launch_depth
from tracetriage.drills.levers import CAUSE_OF_CLASS
from tracetriage.drills.numbers import (
    HEDGE_CREDIT,
    PART_WORDS,
    NumberGrade,
    clause_around,
    grade_number,
    range_ends,
    score_number,
)
from tracetriage.drills.numbers import answer_text as _text
from tracetriage.drills.textmatch import normalise, reading, tables

BOTH_CREDIT = 0.5         # the key's class beside another, without a hedge ("sync and launch overhead")
WRONG_BELOW = 0.5         # a decisive part scoring under this caps the score
HALF_ANSWER_CAP = 1 / 3   # a hedge holding the key caps a third of the way from the wrong cap to 1 (0.4 -> 0.6)
WASTE_CREDIT = 0.5        # the right fix in a plan that also spends the week on the waste lever
PARTIAL_CREDIT = 0.5      # a fix that helps, less than the report's Next
EVIDENCE_NUMBER, EVIDENCE_NAMED = 0.6, 0.4
EVIDENCE_OFF_POINT = 0.3     # true numbers of the trace that do not bear on the bound (DECIDED_BY)
CAUSES = tuple(c.value for c in verdicts.CAUSES if c is not verdicts.Cause.OTHER)   # the four a student names
REGIMES = ("compute", "memory", "overhead")


@dataclass
class Part:
    part: str
    weight: float
    score: float
    answer: object
    expected: object
    feedback: str
    half: bool = False     # a number's half credit (within 2x, a unit slip): it does not lift the decisive cap

    def to_dict(self) -> dict:
        return {"part": self.part, "weight": self.weight, "score": round(self.score, 3), "answer": self.answer,
                "expected": self.expected, "feedback": self.feedback}


@dataclass
class Result:
    drill: str
    score: float
    parts: list[Part]
    capped: bool = False
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"drill": self.drill, "score": round(self.score, 3), "capped": self.capped,
                "parts": [p.to_dict() for p in self.parts], "notes": self.notes}


def grade(drill: Drill, answers: dict) -> Result:
    key = key_of(drill)
    ctx = _Context(drill, key)
    parts = []
    for name, weight in drill.rubric.items():
        ans = answers.get(name)
        if _blank(ans):
            parts.append(Part(name, weight, 0.0, None, ctx.expected(name), words.blank(name)))
            continue
        score, fb = getattr(ctx, f"{drill.kind}_{name}")(ans)
        g = ctx.numbers.get(name)
        half = g.half if g is not None else drill.parts[name][0] == NUMBER and 0 < score < 1
        parts.append(Part(name, weight, score, ans, ctx.expected(name), fb, half=half))
    total = sum(p.weight * p.score for p in parts)
    decisive = next(p for p in parts if p.part == drill.decisive)
    # a wrong decisive part caps the score at the rubric's cap, and so does a decisive number only half right (within
    # 2x, a unit slip, a hedge); a decisive name part half right (a hedge that holds the key, a verdict next to the
    # key's) is half an answer: it caps half-way between the wrong answer's cap and none
    cap = decisive_cap(decisive, drill.cap_if_wrong)
    capped = cap is not None and total > cap
    notes = [words.capped(drill.decisive, cap, half=cap > drill.cap_if_wrong)] if capped else []
    notes.append(words.revealed(drill.source(reveal=True)))
    return Result(drill.id, min(total, cap) if capped else total, parts, capped, notes)


def decisive_cap(decisive: Part, cap_if_wrong: float) -> float | None:
    """The cap a decisive part sets: the rubric's for a wrong one (0) or a number only half right, half-way to 1 for
    a name part that holds the key in a hedge or beside a near answer (0 < score < WRONG_BELOW), none otherwise."""
    if decisive.half or decisive.score <= 0:
        return cap_if_wrong
    if decisive.score < WRONG_BELOW:
        return round(cap_if_wrong + (1 - cap_if_wrong) * HALF_ANSWER_CAP, 4)
    return None


def grade_part(drill: Drill, part: str, answer) -> Part:
    """One part of a drill graded alone (the answer bank in tests/answer_bank grades parts)."""
    ctx = _Context(drill, key_of(drill))
    w = drill.rubric[part]
    if _blank(answer):
        return Part(part, w, 0.0, None, ctx.expected(part), words.blank(part))
    score, fb = getattr(ctx, f"{drill.kind}_{part}")(answer)
    return Part(part, w, score, answer, ctx.expected(part), fb)


def _blank(ans) -> bool:
    if ans is None:
        return True
    if isinstance(ans, str):
        return not ans.strip()
    if isinstance(ans, list):
        return not any(str(a).strip() for a in ans)
    return False


# --- names and levers ----------------------------------------------------------------------------------

def score_name(text: str, key: str, table: dict, allow_two: bool = False, lead: bool = True) -> tuple[float, object]:
    """A name part: the key's class alone 1, beside another 0.5, hedged with one other HEDGE_CREDIT, a list of the
    options or a denial or another class 0."""
    head = stated_head(text, table)
    if head is not None:
        # "sideshow: ... The lever is bigger tiles": the answer is its head; what follows the colon are its reasons
        return ((DOUBT_CREDIT if doubted(text) else 1.0) if head.asserted == (key,) else 0.0), head
    r = reading(text, table, lead=lead)
    main = r.main
    others = set(table) - {key}
    if len(table) == 2 and not r.asserted and r.denied == others:
        return 1.0, r      # of two answers, denying the other one says this one ("not prefill" is decode)
    if len(table) == 2 and r.asserted == (key,) and not r.hedged and OR_BOTH.search(text.lower()):
        # "prefill, or both": of two answers, the second is offered beside the key, as naming both does
        from dataclasses import replace

        return BOTH_CREDIT, replace(r, asserted=(key, *others))
    if key in r.denied or key not in r.asserted:
        return 0.0, r
    if r.hedged and not (allow_two and len(main) <= 2):
        if len(set(r.asserted)) == 2 and r.asserted[0] == key and leans(text):
            return LEAN_CREDIT, r
        if 2 < len(set(r.asserted)) < len(table) and r.asserted[0] == key and leans(text):
            # "host_work, or possibly launch_overhead or a sync": the key first, some options after it as lesser
            # ones; not every option of the question (that list is no answer): as a list of levers holding the fix
            return LIST_CREDIT, r
        return (HEDGE_CREDIT if len(set(r.asserted)) == 2 else 0.0), r
    if len(set(main)) >= LIST_IS_HEDGE and not allow_two:
        return 0.0, _as_hedge(r)     # every cause listed, however joined: a list of the options is no answer
    if len(set(r.asserted)) == 2 and not allow_two and BOTH_HEDGE.search(text.lower()):
        return HEDGE_CREDIT, _as_hedge(r)     # "launches and bytes both", "a mix of the two": no choice made
    if len(set(r.asserted)) == 2 and not allow_two and offers_later(text):
        # the lead's class, the other offered as a possibility in a later clause: a hedge that leans to the lead
        return (LEAN_CREDIT if r.asserted[0] == key else HEDGE_CREDIT), _as_hedge(r)
    if key in r.minor and len(main) and key not in main:
        return 0.0, r
    if tuple(main) == (key,) or (allow_two and len(main) <= 2):
        return (DOUBT_CREDIT if not allow_two and doubted(text) else 1.0), r
    return BOTH_CREDIT, r


HEAD_WORDS = 4     # "sideshow:", "compute bound:", "not worth it:": a label before the reasons


def stated_head(text: str, table: dict):
    """The reading of an answer's head, where it opens with a short label that names one class and nothing else,
    then a colon; None otherwise."""
    head, colon, rest = text.partition(":")
    if not colon or not rest.strip() or len(head.split()) > HEAD_WORDS:
        return None
    r = reading(head, table)
    return r if len(set(r.asserted)) == 1 and not r.hedged and not r.denied else None


OR_BOTH = re.compile(r"\b(?:or|maybe|possibly|perhaps|probably)\s+(?:\w+\s+)?both\b")
LIST_IS_HEDGE = 3     # three classes of one exclusive question, asserted alike, are the list of options
BOTH_HEDGE = re.compile(r"\bboth\b(?!\s+roofs?\b)|\ba mix\b|\bequally\b|\ba combination\b|\beach of\b|"
                        r"\ball of\b")


def _as_hedge(r):
    from dataclasses import replace

    return replace(r, hedged=True)


def lever_tables() -> tuple[dict, dict]:
    """The lever classes' phrases (their tools and, `vague`, their direction alone), and the idle causes' names that
    a removal verb makes a lever ("avoid syncs")."""
    names = tables("cause", "name")
    say, vague = tables("lever", "say"), tables("lever", "vague")
    return {c: say[c] + vague.get(c, ()) for c in say}, {cls: names[c.value] for cls, c in CAUSE_OF_CLASS.items()}


# A fix named by its direction alone ("make each launch do more work", "look at what the CPU does") and not by a tool
# (CUDA graphs, py-spy): right, but a teacher marks it vague (0.6 to 0.7 on the held-out sets)
VAGUE_LEVER_CREDIT = 0.6


def waste_set(key: dict) -> set:
    """The week's waste: the report's lever's class and every class predicting within a point or two of it."""
    return set(key.get("waste_classes") or ([key["waste_class"]] if key.get("waste_class") else []))


# A plan in ranked steps whose first step is the fix ("profile the host with py-spy and move that work off the critical
# path; after that, pin memory and make the copies non_blocking"): a plan, not options; teachers gave it full marks
# (1.0 twice, 0.85), where the lever list's LIST_CREDIT had it 0.3
RANKED_PLAN = re.compile(r"\b(?:then|after that|afterwards|next,|followed by|once that|second(?:ly)?,)")
PINNING_SERVES = ("overlap_copies", "move_host_work")


def _pinning_serves(text: str, pos: set, table: dict, removal: dict) -> str | None:
    """The fix that pinning is a part of, where one option names both ("pin_memory and non_blocking copies"); None
    where pinning is offered as an option of its own ("maybe workers, maybe pin memory")."""
    if "pin_memory" not in pos:
        return None
    for option in OPTION_WORDS.split(text.lower()):
        said = set(reading(option, table, removal).asserted)
        if "pin_memory" in said:
            return next((c for c in PINNING_SERVES if c in said), None)
    return None


# A lever class whose vocabulary borrows another's words (drills/vocab.toml: cut_launches lists "fuse*", "triton",
# "torch.compile" after the report's "torch.compile to fuse, then CUDA graphs").
BORROWS = {"cut_launches": "fuse"}


def score_lever(text: str, key: dict) -> tuple[float, object, str]:
    """A lever part against the report's Next: (score, the reading, which case: right, waste, partial, hedge,
    denied, pinned, wrong, none)."""
    accept, partial, wastes = set(key["accept"]), set(key.get("partial", ())), waste_set(key)
    table, removal = lever_tables()
    # a word shared by the fix and the week's waste ("fuse" where fusion is the waste) is the waste's
    # (the report's own waste lever only: the band's other levers count by words of their own), unless the waste
    # only borrows the fix's words: cutting launches says "fuse" for the report's "torch.compile to fuse, then
    # CUDA graphs", but where fusion is the fix and CUDA graphs the waste, "fuse" is the fix
    own_waste = frozenset({key.get("waste_class")} - accept - {None})
    if own_waste & set(BORROWS) and accept & {BORROWS[c] for c in own_waste & set(BORROWS)}:
        own_waste = frozenset()
    r = reading(text, table, removal, frozenset(accept | partial), own_waste)
    pos = set(r.main)       # the levers the answer offers: a later clause's aside is not one (meaning.read)
    if not pos:
        return 0.0, r, "denied" if r.denied & accept else "none"
    ranked = bool(r.asserted) and r.asserted[0] in accept and bool(RANKED_PLAN.search(text.lower()))
    if r.hedged and pos - accept - partial and not ranked:
        if pos & accept and len(pos) == 2 and r.asserted and r.asserted[0] in accept and leans(text):
            return LEAN_CREDIT, r, "hedge"
        # options, not classes: one word read as two of the accepted classes ("torch.compile") is one option
        lender = {borrowed: c for c, borrowed in BORROWS.items() if c in accept}
        # pinning is a part of the fix it serves ("pin memory and non_blocking copies", the report's own "pin host
        # memory, copy with non_blocking=True"; "DataLoader(num_workers=4, pin_memory=True)"), not an option of its own
        served = _pinning_serves(text, pos, table, removal)
        options = {served if c == "pin_memory" and served else lender.get(c, c) for c in pos}
        pos = {served if c == "pin_memory" and served else c for c in pos}
        if pos & accept and len(options) >= LIST_IS_HEDGE:
            return LIST_CREDIT, r, "hedge"
        if pos & accept and len(pos) == 2 and r.asserted[0] in accept and leans(text):
            return LEAN_CREDIT, r, "hedge"
        # a hedge of two that holds a fix which helps (the Next or a lesser one): a hedge, as a name part's is
        return (HEDGE_CREDIT if pos & (accept | partial) and len(options) == 2 else 0.0), r, "hedge"
    if pos & accept:
        if pos & wastes:
            return WASTE_CREDIT, r, "waste"
        if key["next"] == "cut_launches" and not pos - {*BORROWS, *BORROWS.values()}:
            depth = launch_depth(text, r.hedged or bool(OPTION_WORDS.search(text.lower())))
            if depth is not None:
                return depth, r, "fusion_only"
        tools = reading(text, tables("lever", "say"), removal, frozenset(accept | partial), own_waste)
        if not set(tools.main) & accept:
            return VAGUE_LEVER_CREDIT, r, "vague"
        return 1.0, r, "right"
    if pos & partial:
        return (0.0, r, "waste") if pos & wastes else (PARTIAL_CREDIT, r, "partial")
    if "pin_memory" in pos and key["next"] == "overlap_copies":
        return 0.0, r, "pinned"
    return 0.0, r, "waste" if pos & wastes else "wrong"


# A pattern is a shape with its size: teachers give the right shape without a number ("short gaps between the
# kernels", "long gaps") about half, and gaps described in generic words that are true of the trace but name no
# mechanism ("small gaps" for 6 µs drains after each sync, "the GPU mostly idle") about a third.
PATTERN_UNMEASURED = 0.5
PATTERN_GENERIC = 0.3
# a number read off the lane: a gap's length, a kernel's, a count; or a size in words ("sub-µs kernels")
MEASURE = re.compile(r"\d|\bsub[- ]?(?:µs|μs|us|microsecond)")
GAPS = re.compile(r" (?:gap|gaps|idle|white|space|spaces|holes?|bubbles?|pauses?|waits?) ")
SHORT = re.compile(r" (?:short|small|tiny|brief|little) ")
LONG = re.compile(r" (?:long|large|big|wide|huge|millisecond) ")
WEAK_PATTERN = ("short gaps", "small gaps", "long gaps", "large gaps", "big gaps", "wide gaps", "long pauses",
                "long idle", "millisecond*", "n ms gaps", "launch", "launches", "launching", "overhead")

# what sits around the gaps names the pattern ("the copy lane is full", "a drain after each sync", "the host in the
# DataLoader"); these words only draw its shape
SHAPE_WORDS = WEAK_PATTERN + ("tiny kernels", "small kernels", "between kernels", "between every kernel", "many gaps",
                              "tiny gaps", "thin gaps", "many small ops", "many tiny ops", "too many small kernels",
                              "too many kernels", "regular gaps", "each step", "every step", "per step")


# The gap's size read off the lane decides which gaps an answer describes: an answer whose stated gap is the key
# cause's (nearest it of the causes that hold a tenth of the span, within GAP_SIZE_NEAR) has read the right gaps even
# where its words are generic or borrow another class's ("~1.6 ms gaps between kernels" on host-work gaps of 1.48 ms,
# "~55 µs holes, a small copy before each" on 47 µs sync drains): teachers gave such answers 0.5 to 1 on the held-out
# sets, the mechanism left unnamed.
PATTERN_SIZED = 0.75
GAP_SIZE_NEAR = 3.0      # a gap read off the lane by eye, against the median: gaps vary within a cause, not by 10x
RIVAL_SHARE = 0.10       # a cause from a tenth of the span is one the lane shows (the triage's bound rule)


def _pattern_beyond_shape() -> dict:
    return {c: tuple(p for p in ph if p not in SHAPE_WORDS) for c, ph in pattern_table().items()}


OPTION_WORDS = re.compile(r"\b(?:or|either|maybe|perhaps|possibly)\b")   # options offered, not a plan


def bound_table() -> dict:
    """The triage's bound: an idle cause or a regime, read together so that naming both is seen."""
    return {**tables("cause", "name"), **tables("regime", "name", ("compute", "memory"))}


def pattern_table() -> dict:
    """What the GPU lane shows: the pattern's words, and the causes' names (a drain after each .item())."""
    pat, names = tables("cause", "pattern"), tables("cause", "name")
    return {c: tuple(pat.get(c, ())) + tuple(names.get(c, ())) for c in names}


class _NewRungs:
    """The course's rungs added with the fusion ledger: M00.01, M00.03, M01.03, M01.04, M01.07."""

    # --- M00.01: the regime, the fix, and the lever that would waste the week --------------------------------
    def waste_regime(self, ans):
        return self._name(ans, self.key["regime"], tables("regime", "name"), self._roof_why())

    def waste_fix(self, ans):
        return self._lever(ans)

    def waste_waste(self, ans):
        k, nw = self.key, self.facts.next_words
        wastes = waste_set(k)
        table, removal = lever_tables()
        # a word shared by the fix (or a partial fix) and a lever of the waste band is the fix's ('fusion' where
        # fusion helps and cutting launches, which borrows the word, buys nothing), as score_lever reads it
        first, prefer = frozenset({k.get("waste_class")} - {None}), frozenset(k["accept"]) | frozenset(k["partial"])
        band = frozenset(wastes)
        r = reading(_text(ans), table, removal, prefer, first, then=band)
        if not r.asserted and not r.denied:
            # no lever named: the effort that would waste the week may be named by what it works on ("host-side work")
            efforts = {c: tuple(table[c]) + tuple(removal.get(c, ())) for c in table}
            r = reading(_text(ans), efforts, removal, prefer, first, then=band)
        pos = set(r.main)       # the levers the answer offers: a later clause's aside is not one (meaning.read)
        own = self._own_prediction(pos)
        if pos & set(k["accept"]) and not pos & wastes:
            return 0.0, words.waste_is_the_fix(nw) + own
        if r.hedged and pos & wastes and pos - wastes:
            credit = HEDGE_CREDIT if len(pos) == 2 else 0.0
            if len(pos) == 2 and r.asserted and r.asserted[0] in wastes and leans(_text(ans)):
                credit = LEAN_CREDIT
            return credit, words.hedged(k.get("waste_class") or min(wastes), pos - wastes, credit)
        if pos and pos <= wastes:
            return 1.0, words.waste_right(nw) + own
        if pos & wastes:
            return BOTH_CREDIT, words.both(k.get("waste_class") or min(wastes), pos - wastes)
        return 0.0, words.waste_wrong(set(r.main), nw) + own

    # --- M01.07: the fusion byte ledger ---------------------------------------------------------------------
    def _ledger_why(self) -> str:
        k = self.key
        return words.ledger_why(k["ops"], k["eager_gb"], k["fused_gb"], k["passes"], k["chains"])

    def ledger_eager_bytes(self, ans):
        s, fb = self._number("eager_bytes", ans, self.key["eager_gb"], "GB")
        return s, f"{fb} {self._ledger_why()}."

    def ledger_fused_bytes(self, ans):
        k = self.key
        # what the lever counts (inputs read once per pass), or the capture's minimum (one pass): both are right
        right = (k["fused_gb"], k.get("fused_gb_counted"))
        s, fb = max((self._number("fused_bytes", ans, v, "GB", right) for v in right if v), key=lambda x: x[0])
        counted = words.ledger_counted(k["fused_gb_counted"]) if k.get("fused_gb_counted") else ""
        return s, f"{fb} {self._ledger_why()}{counted}."

    def ledger_speedup(self, ans):
        k = self.key
        right = (k["speedup"], k.get("speedup_measured"), k.get("speedup_wall"))
        s, fb = max((self._number("speedup", ans, v, "×", right) for v in right if v), key=lambda x: x[0])
        why = words.ledger_speedup_why(k["speedup"], k.get("speedup_wall"), k.get("fuse_ratio"),
                                       k.get("speedup_measured"))
        return s, f"{fb} {why}."

    # --- M01.04: a kernel has no single speed ------------------------------------------------------------------
    def shapes_tflops_small(self, ans):
        return self._number("tflops_small", ans, self.key["tflops_small"], "TFLOP/s")

    def shapes_tflops_large(self, ans):
        return self._number("tflops_large", ans, self.key["tflops_large"], "TFLOP/s")

    def shapes_small_regime(self, ans):
        k = self.key
        why = words.shapes_why(self.drill.shapes, k["tflops_small"], k["tflops_large"], k["small_regime"],
                               k["large_regime"])
        return self._name(ans, k["small_regime"], tables("regime", "name"), why)

    # --- M00.03: the decode floor -----------------------------------------------------------------------------
    def floor_floor_ms(self, ans):
        k = self.key
        s, fb = self._number("floor_ms", ans, k["floor_ms"], "ms")
        return s, f"{fb} {words.floor_why(k['gb_per_token'], k['peak_gbps'], k['floor_ms'], k['per_token_ms'])}."

    def floor_per_token_ms(self, ans):
        return self._per_token(ans, "per_token_median_ms")

    def floor_lever(self, ans):
        return self._lever(ans)

    # --- M01.03: the honest timer -----------------------------------------------------------------------------
    def timer_median_ms(self, ans):
        return self._number("median_ms", ans, self.key["median_ms"], "ms")

    def timer_spread_pct(self, ans):
        return self._number("spread_pct", ans, self.key["spread_pct"], "%")

    def timer_verdict(self, ans):
        k = self.key
        why = words.timer_why(self.drill.variants, k["median_ms"], k["spread_pct"], k["other_median_ms"],
                              k["other_spread_pct"], k["verdict"], k["repeats"])
        return self._name(ans, k["verdict"], tables("verdict", "name"), why)


class _Context(_NewRungs, LadderParts):
    """The drill, its stored key, and the trace's facts (read once, when feedback needs them)."""

    _score_name = staticmethod(score_name)     # the ladder's parts read their verdicts as every name part is read

    def __init__(self, drill: Drill, key: dict):
        self.drill, self.key = drill, key
        self._facts = self._diff = None
        self.numbers: dict[str, NumberGrade] = {}   # each number part's best reading: is its credit only half?

    @property
    def facts(self) -> evidence.Facts:
        if self._facts is None:
            self._facts = evidence.facts(self.drill.trace_path())
        return self._facts

    @property
    def diff(self) -> evidence.DiffFacts:
        if self._diff is None:
            self._diff = evidence.diff_facts(self.drill.trace_path(), self.drill.after_path())
        return self._diff

    def expected(self, part: str):
        k = self.key
        if self.drill.kind in LADDER_KINDS:
            return ladder_expected(self.drill.kind, k, part)
        return {"pattern": words.PATTERN.get(k.get("cause"), None), "cause": k.get("cause"),
                "experiment": words.lever_label(k["next"]) if "next" in k else None,
                "suspects": k.get("suspects"), "bound": k.get("bound"),
                "evidence": [n["value"] for n in k.get("numbers", [])] or None,
                "ranges": [k.get("prefill_range"), k.get("decode_range")] if "prefill_range" in k else None,
                "ttft_ms": k.get("ttft_ms"), "per_token_ms": k.get("per_token_ms"),
                "prefill_regime": k.get("prefill_regime"), "regime": k.get("regime"), "achieved": k.get("achieved"),
                "lever": words.lever_label(k["next"]) if "next" in k else None, "speedup": k.get("speedup"),
                "explained_by": k.get("explained_by"), "phase": k.get("phase"),
                "refuse": words.PHASE_FIXES.get(k.get("refuse")),
                "fix": words.lever_label(k["next"]) if "next" in k else None,
                "waste": words.lever_label(k["waste_class"]) if k.get("waste_class") else None,
                "eager_bytes": f"{k['eager_gb']} GB" if "eager_gb" in k else None,
                "fused_bytes": f"{k['fused_gb']} GB" if "fused_gb" in k else None,
                "tflops_small": k.get("tflops_small"), "tflops_large": k.get("tflops_large"),
                "small_regime": k.get("small_regime"), "floor_ms": k.get("floor_ms"),
                "median_ms": k.get("median_ms"), "spread_pct": k.get("spread_pct"),
                "verdict": k.get("verdict")}.get(part)

    def _cause_evidence(self, cause: str) -> str:
        f = self.facts
        return words.evidence(cause, f.cause_evidence[cause], f.cause_share[cause])

    def _name(self, ans, key: str, table: dict, why: str, allow_two: bool = False):
        s, r = score_name(_text(ans), key, table, allow_two)
        if s == 1.0:
            return s, words.bound_right(key, why)
        if key in r.denied:
            return 0.0, words.denied(key, why)
        if r.hedged and key in r.asserted:
            return s, words.hedged(key, set(r.asserted) - {key}, s)
        if s == DOUBT_CREDIT and r.main == (key,):
            return s, words.doubted(words.label(key), s, why)
        if s > 0:
            return s, words.both(key, set(r.main) - {key})
        return 0.0, words.bound_wrong(set(r.main), key, why)

    def _number(self, part: str, ans, key: float, unit: str, also: tuple = ()):
        g = grade_number(ans, key, unit, tuple(tuple(c) for c in self.key.get("confusable", {}).get(part, ())),
                         PART_WORDS.get(part, ()), tuple(v for v in also if v and v != key))
        if part not in self.numbers or g.score > self.numbers[part].score:
            self.numbers[part] = g
        if g.said is None:
            return 0.0, words.no_number(part, key, unit, g.other_dim)
        if g.hedged:
            return g.score, words.number_hedged(part, g.hedged, key, unit, g.score)
        if g.span is not None:
            return g.score, words.number_range(g.span, key, unit, g.score)
        if g.confused is not None:
            return g.score, words.number_confused(part, g.said, g.confused, key, unit)
        if g.slip is not None:
            return g.score, words.unit_slip(part, g.said, key, unit, g.slip)
        return g.score, words.number_feedback(part, g.said, key, unit, g.score)

    def _lever(self, ans):
        s, r, case = score_lever(_text(ans), self.key)
        f = self.facts
        own = "" if case == "right" else self._own_prediction(set(r.asserted))
        return s, words.lever_feedback(case, s, self.key, f.next_words, set(r.asserted)) + own

    def _own_prediction(self, said: set) -> str:
        """What the replay predicts for the lever(s) the student named, in the feedback: the why of the grade."""
        from tracetriage.drills.levers import class_of_lever

        savings = self.facts.lever_savings
        mine = {lv: sv for lv, sv in savings.items() if class_of_lever(lv) in said}
        return words.own_prediction(mine) if mine else ""

    # --- idle cause (M02.03, M02.04) -----------------------------------------------------------
    def idle_cause_cause(self, ans):
        cause = self.key["cause"]
        s, r = score_name(_text(ans), cause, tables("cause", "name"))
        ev = self._cause_evidence(cause)
        if s == 1.0:
            return s, words.cause_right(cause, ev)
        if cause in r.denied:
            return 0.0, words.denied(cause, ev)
        if r.hedged and cause in r.asserted:
            return s, words.hedged(cause, set(r.asserted) - {cause}, s)
        if s > 0:
            return s, words.both(cause, set(r.main) - {cause})
        regimes = set(reading(_text(ans), tables("regime", "name", ("compute", "memory"))).asserted)
        return 0.0, words.cause_wrong(set(r.main) or regimes, cause, ev)

    def idle_cause_pattern(self, ans):
        cause, text = self.key["cause"], _text(ans)
        s, r = score_name(text, cause, pattern_table(), lead=False)
        measured = bool(MEASURE.search(text.lower())) or cause in reading(text, _pattern_beyond_shape(),
                                                                           lead=False).asserted
        if s == 1.0 and not measured:
            return PATTERN_UNMEASURED, words.pattern_unmeasured(cause, self._pattern_ev(cause))
        if s == 1.0:
            return s, words.pattern_right(cause)
        others = set(r.main) - {cause}
        if 0 < s < 1 and not r.hedged and self._sized_as(text, cause):
            return 1.0, words.pattern_right(cause)      # the other class's words are a detail of the right gaps
        if 0 < s < 1 and not r.hedged and others <= self._lane_causes():
            # the lane's other cause beside the key's ("some gaps with copies, some with nothing"): a description of
            # a lane that holds both, not a hedge; teachers gave 0.5 to 1 as it kept the two apart
            return PATTERN_SIZED, words.pattern_with_other(cause, others)
        if s == 0 and cause not in r.denied and self._sized_as(text, cause):
            return PATTERN_SIZED, words.pattern_sized(cause, self._pattern_ev(cause))
        if s == 0 and not measured and not r.denied and self._true_of_the_gaps(text, cause):
            return PATTERN_GENERIC, words.pattern_generic(cause, self._pattern_ev(cause))
        if r.hedged and s > 0:
            return s, words.hedged("the right pattern", set(r.asserted) - {cause}, s)
        if s > 0:
            return s, words.both("the right pattern", set(r.main) - {cause})
        return 0.0, words.pattern_wrong(cause, words.evidence_short(cause, self.facts.cause_evidence[cause]))

    @staticmethod
    def _pattern_named(text: str) -> bool:
        return bool(reading(text, _pattern_beyond_shape(), lead=False).asserted)

    def _pattern_ev(self, cause: str) -> str:
        return words.evidence_short(cause, self.facts.cause_evidence[cause])

    def _lane_causes(self) -> set:
        """The causes that hold a tenth of the span or more: naming one beside the key describes the lane."""
        return {c for c, share in self.facts.cause_share.items() if share >= RIVAL_SHARE}

    def _sized_as(self, text: str, cause: str) -> bool:
        """Whether a gap size the answer states (any time it gives, a range's ends included) is the key cause's
        gaps: within GAP_SIZE_NEAR of their median, and nearer it than the median of any other cause on the lane."""
        ev = self.facts.cause_evidence
        medians = {c: (ev.get(c) or {}).get("median_gap_us") or 0 for c in self._lane_causes() | {cause}}
        if not medians.get(cause):
            return False
        found, high = range_ends(text, amounts(text))
        said = [a.base for a in found if a.dim == "time"] + [b.base for b in high.values() if b.dim == "time"]
        # the sizes `drill show` prints for the cause's gaps too: its list of the longest gaps ("90.9 µs idle, the
        # host in cudaStreamSynchronize") is what a student reads the size off, where the median drain is 6 µs
        own = [medians[cause], *self._shown_gap_sizes(cause)]

        def off(v: float, m: float) -> float:
            return max(v / m, m / v)
        return any(v > 0 and min(off(v, m) for m in own) <= GAP_SIZE_NEAR and
                   all(min(off(v, m) for m in own) <= off(v, m) for c, m in medians.items() if m and c != cause)
                   for v in said)

    def _shown_gap_sizes(self, cause: str) -> list[float]:
        """The lengths (µs) of the longest gaps `drill show` lists that are the cause's."""
        from tracetriage.drills import render

        t = evidence.lanes(self.drill.trace_path())
        of_cause = {(s, e - s) for s, e, c in t.gaps if c == cause}
        return [length for start, length, _ in render.large_gaps(t) if (start, length) in of_cause]

    def _true_of_the_gaps(self, text: str, cause: str) -> bool:
        """An answer that names only gaps or idle, in generic words ("small gaps", "the GPU mostly idle") that are
        true of this trace's gaps: short where the key's gaps are under a millisecond, long where they are over."""
        own = {c: tuple(p for p in ph if p not in WEAK_PATTERN) for c, ph in pattern_table().items()}
        if reading(text, own, lead=False).asserted or self._pattern_named(text):
            return False                 # a pattern of its own words: another class's, so wrong
        t = " " + normalise(text) + " "
        if not GAPS.search(t):
            return False
        median_us = (self.facts.cause_evidence.get(cause) or {}).get("median_gap_us") or 0
        if SHORT.search(t):
            return median_us < 1000
        if LONG.search(t):
            return median_us >= 1000
        return True

    def idle_cause_experiment(self, ans):
        return self._lever(ans)

    # --- triage (M02.01) --------------------------------------------------------------------------
    def triage_suspects(self, ans):
        names = [normalise(a) for a in (ans if isinstance(ans, list) else [ans])]
        text = " ".join(names)
        found, missed = [], []
        for s in self.key["suspects"]:
            short = s.split("::")[-1]
            hit = normalise(s).strip() in text or re.search(rf"(?<![a-z0-9_]){re.escape(short.lower())}(?![a-z0-9_])",
                                                            text)
            (found if hit else missed).append(s)
        score = len(found) / len(self.key["suspects"])
        return score, words.suspects_feedback(found, missed, words.hotspot_table(self.facts.hotspots))

    def _bound_why(self) -> str:
        b = self.key["bound"]
        if b in CAUSES:
            return self._cause_evidence(b)
        f = self.facts
        return words.regime_why(b, f.compute_share, f.memory_share, f.idle_share, f.achieved_tflops,
                                f.achieved_gbps, f.intensity, f.ridge, f.dtype)

    def triage_bound(self, ans):
        b = self.key["bound"]
        if b in CAUSES:
            # an idle cause and the kernels' regime answer two questions, not one twice: "synchronization: the
            # matmuls themselves are compute-bound" names the bound and describes the kernels truly
            r = reading(_text(ans), bound_table())
            regime = self.facts.regime
            if not r.hedged and b not in r.denied and set(r.main) == {b, regime} and regime in REGIMES:
                return 1.0, words.bound_right(b, self._bound_why())
        return self._name(ans, b, bound_table(), self._bound_why())

    def triage_evidence(self, ans):
        text = _text(ans)
        hit = quoted_numbers(text, self.key["numbers"])
        named = score_name(text, self.key["bound"], bound_table())[0] == 1.0
        argued = set(reading(text, bound_table()).main) - {self.key["bound"]}
        if hit and argued and not named:
            # the trace's numbers argued for another bound ("87% of device time, so it waits on memory") support
            # that one, not the key: no support
            return 0.0, words.evidence_against(hit, argued, self.key["bound"])
        score = (EVIDENCE_NUMBER if hit else 0.0) + (EVIDENCE_NAMED if named else 0.0)
        if not hit:
            return score, words.evidence_missing(self.key["numbers"])
        deciding = [n for n in hit if decides(n, self.key["bound"], self.key["numbers"])]
        if deciding:
            return 1.0, words.evidence_score(hit, named)
        if any(SHOWS_IDLE in " ".join(n["about"]) for n in hit):
            return score, words.evidence_score(hit, named)
        return EVIDENCE_OFF_POINT + (EVIDENCE_NAMED if named else 0.0), words.evidence_off_point(hit)

    def triage_experiment(self, ans):
        return self._lever(ans)

    # --- named ranges (M02.02) ------------------------------------------------------------------
    def ranges_ranges(self, ans):
        text = _text(ans)
        names = (self.key["prefill_range"], self.key["decode_range"])
        found, missed = [], []
        table = tables("ranges", "name")
        r = reading(text, table)
        for cls, name in zip(("prefill", "decode"), names):
            ok = cls in r.asserted or normalise(name).strip() in normalise(text)
            (found if ok else missed).append(name)
        return len(found) / 2, words.ranges_feedback(found, missed, names)

    def ranges_ttft_ms(self, ans):
        return self._number("ttft_ms", ans, self.key["ttft_ms"], "ms")

    def ranges_prefill_regime(self, ans):
        r = self.key["prefill_regime"]
        prefill = next((x for x in self.facts.ranges if x["name"] == self.key["prefill_range"]), {})
        why = words.prefill_regime_why(r, prefill.get("tflops"), prefill.get("count"))
        return self._name(_about_phase(_text(ans), "prefill"), r, tables("regime", "name"), why)

    # --- prefill or decode: the incident (M00.04) ---------------------------------------------------
    def incident_ttft_ms(self, ans):
        return self._number("ttft_ms", ans, self.key["ttft_ms"], "ms")

    def incident_per_token_ms(self, ans):
        # the question asks the median inter-token time, and `drill show` prints the mean beside it: the mean is
        # the same steps' other statistic (a confusable of the key), not a second right answer
        return self._number("per_token_ms", ans, self.key["per_token_ms"], "ms")

    def _per_token(self, ans, other: str):
        """The per-token time: the key's statistic, or the other one of the same steps (mean, median): both are
        the per-token time `drill show` lets you read (a range's median wall; all instances over the count)."""
        k = self.key
        right = (k["per_token_ms"], k.get(other))
        return max((self._number("per_token_ms", ans, v, "ms", right) for v in right if v), key=lambda x: x[0])

    def _incident_why(self) -> str:
        k, slo = self.key, self.drill.slo
        return words.incident_why(k["phase"], k["ttft_ms"], k["per_token_ms"], slo["ttft_ms"], slo["per_token_ms"],
                                  k["over_target"], k["phase_regime"])

    def incident_phase(self, ans):
        return self._name(ans, self.key["phase"], tables("phase", "name"), self._incident_why())

    def incident_refuse(self, ans):
        other = self.key["refuse"]
        s, r = score_name(_refused(_text(ans)), other, tables("phase", "fix"), allow_two=False)
        if s == 1.0:
            return s, words.refuse_right(other, self.key["phase"])
        if r.hedged and s > 0:
            return s, words.hedged(f"a {other} fix", {f"a {c} fix" for c in set(r.asserted) - {other}}, s)
        if s > 0:
            return s, words.both(f"a {other} fix", set(r.main) - {other})
        return 0.0, words.refuse_wrong(set(r.main), other, self.key["phase"])

    # --- roofline (M01.05) ------------------------------------------------------------------------
    def _roof_why(self) -> str:
        f = self.facts
        return words.regime_why(self.key["regime"], f.compute_share, f.memory_share, f.idle_share,
                                f.achieved_tflops, f.achieved_gbps, f.intensity, f.ridge, f.dtype)

    def roofline_regime(self, ans):
        return self._name(ans, self.key["regime"], tables("regime", "name"), self._roof_why())

    def roofline_achieved(self, ans):
        return self._number("achieved", ans, self.key["achieved"], self.key["achieved_unit"])

    def roofline_lever(self, ans):
        return self._lever(ans)

    # --- overhead-bound collapse (M01.08) --------------------------------------------------------------
    def collapse_speedup(self, ans):
        return self._number("speedup", ans, self.key["speedup"], "×")

    def collapse_explained_by(self, ans):
        how = self.key["explained_by"]
        return self._name(ans, how, tables("explain", "name"), self.diff.explanation)

    def collapse_lever(self, ans):
        return self._lever(ans)


# A sentence of a refusal that says which fix to make instead ("the decode fix is CUDA graphs", "instead, speculative
# decoding"): context, not a second fix refused.
KEEP_INSTEAD = re.compile(r"\binstead\b(?!\s+of)|\bthe (?:[\w-]+ )?fix (?:is|would be|there is)\b|"
                          r"\bwhat (?:helps|works|would help)\b|\b(?:i|we) (?:would|d|'d) (?:do|use|reach for)\b")
SENTENCE = re.compile(r"(?<=[.;!?])\s+|\s[-–—]+\s")


def _about_phase(text: str, phase: str) -> str:
    """The sentences of an answer about one phase that are not about the other one alone ("compute. The overhead is
    in decode, not here": the decode's regime is context to the prefill's)."""
    names = tables("phase", "name")
    other = next(c for c in names if c != phase)
    kept = [x for x in SENTENCE.split(text)
            if not (other in reading(x, {other: names[other]}).asserted and
                    phase not in reading(x, {phase: names[phase]}).asserted)]
    return " ".join(kept) if kept else text


def _refused(text: str) -> str:
    """The sentences of a refusal that name what is refused (all of them, when every one says what to do instead)."""
    sentences = SENTENCE.split(text)
    kept = [x for x in sentences if not KEEP_INSTEAD.search(x.lower())]
    return " ".join(kept) if kept else text


# What each bound is shown by: the numbers about it. An idle cause by the idle share, its own share, its gaps; compute
# or memory by the busy time's top op, the idle left (little), the rate against its roof. A true number about
# something else (another op's 8%, the span's length, the matmul's share of a trace the host starves) supports no
# bound: the teachers give it 0.2-0.3, and numbers that decide the bound full marks, the bound named or not.
# The idle share alone shows an idle cause's trace idles, not which cause: it earns EVIDENCE_NUMBER, as before.
DECIDED_BY = {"synchronization": ("sync", "gap"), "host_work": ("host", "gap"),
              "launch_overhead": ("launch", "gap"), "data_transfer": ("copy", "transfer", "gap"),
              "compute": ("idle", "tflop"), "memory": ("idle", "bandwidth")}
SHOWS_IDLE = "idle"


def decides(n: dict, bound: str, numbers: list[dict]) -> bool:
    """Whether a key number of the triage is about what decides the bound."""
    about = " ".join(n["about"]).lower()
    if bound in ("compute", "memory") and numbers and n is numbers[0]:
        return True            # the top op's share of the busy time: what the GPU is bound doing
    return any(w in about for w in DECIDED_BY.get(bound, ()))


def quoted_numbers(text: str, numbers: list[dict]) -> list[dict]:
    """The key's numbers the text quotes: each amount of the text, in its clause, against the quantities that
    clause names (by their `about` words), else against every key number of its dimension. A bare number
    counts only where its clause names the quantity ("I drank 100 coffees" quotes nothing)."""
    hit = []
    for a in amounts(text):
        clause = clause_around(text, a)
        named = [n for n in numbers if any(re.search(rf"(?<![a-z]){re.escape(w.lower())}", clause) for w in n["about"])]
        if a.dim is None:
            pool = [n for n in named if _bare_fits(a, n)]
        else:
            # the quantities its clause names, of its dimension; else any of its dimension ("16% of span": the span
            # is named, but a share is not a span)
            pool = [n for n in named if n["unit"] and dimension(n["unit"]) == a.dim] or \
                [n for n in numbers if n["unit"] and dimension(n["unit"]) == a.dim]
        # of the quantities it could be, the nearest ("busy 97%" is the busy share, not the top op's 87%)
        fits = [(abs(math.log(max(said, 1e-12) / n["value"])) if n["value"] > 0 and said > 0 else 0.0, i, n)
                for i, n in enumerate(pool) for said in [in_unit(a, n["unit"]) if n["unit"] else a.value]
                if score_number(said, n["value"]) == 1.0]
        if fits:
            n = min(fits, key=lambda f: (f[0], f[1]))[2]
            if n not in hit:
                hit.append(n)
    return hit


def _bare_fits(a: Amount, n: dict) -> bool:
    """A bare number is a count where the key's is, or a share/rate whose quantity its clause names."""
    return not n["unit"] or bool(a.followed_by in ("percent", "of") or not a.followed_by)
