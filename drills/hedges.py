"""A hedge that leans: the answer's first option asserted, the next set off as the lesser alternative.

    leans("overhead, or possibly memory")      -> True
    leans("0.79 ms, or 0.69 ms if you count only the weights") -> True
    leans("overhead or memory")                -> False (a plain hedge: HEDGE_CREDIT, and it caps)
    leans("maybe overhead, maybe memory")      -> False
"""
from __future__ import annotations

import re

# A hedge that leans: the right option first, the other set off as the lesser ("overhead, or possibly memory",
# "launch_overhead, maybe host_work", "0.79 ms, or 0.69 ms if you count only the weights"). The held-out sets'
# teachers give it 0.5-0.7 and do not cap the file for it ("a hedge that leans to the right option scores 0.5, so
# the cap does not apply"); a plain "A or B" stays HEDGE_CREDIT and caps.
LEAN_CREDIT = 0.5
LEAN = re.compile(r"(?:[,;(]|\s[-–—])\s*(?:or|maybe|possibly|perhaps|though|but)\b|"
                  r"\bor\s+(?:maybe|possibly|perhaps|partly|probably)\b|\bif\b")
OPEN_HEDGE = re.compile(r"^\W*(?:either|maybe|perhaps|possibly|probably|not sure|unsure|could be|might be)\b")
# a list of three levers or more holding the right one: an unranked plan, not a choice; teachers give 0.3-0.5
LIST_CREDIT = 0.3


# Two options joined by a bare "or" before any pause ("memory or overhead: ..., so it could be either"), or "could be
# either": an even hedge, whatever a later clause sets off with ", but" ("idle ~95% either way" is no hedge)
EVEN_HEDGE = re.compile(r"^[^,;:(]*\bor\b|\b(?:could|might) be either\b|\beither (?:one|of them|of the two)\b")


def leans(text: str) -> bool:
    """The answer's first option is asserted and the next one set off as a lesser alternative."""
    t = text.lower()
    return bool(LEAN.search(t)) and not OPEN_HEDGE.match(t) and not EVEN_HEDGE.search(t)


# A later clause that offers a second class as a possibility ("compute, though the idle could also make it overhead",
# "launches mostly, though some could be bytes"): the lead is the answer, the rest a lean, not a plain mention
LATER_MAYBE = re.compile(r"(?:[,;(]|\s[-–—]|\bthough\b|\bbut\b)[^,;(]*?\b(?:could|might|may|maybe|possibly|perhaps)\b")


def offers_later(text: str) -> bool:
    """A clause after the first offers something as a possibility (a modal), not as a fact."""
    return bool(LATER_MAYBE.search(text.lower())) and not OPEN_HEDGE.match(text.lower())



# The key asserted alone but held in doubt: a hedging adverb and a clause that keeps the other answer open ("probably
# real, but the spread is so wide it could partly be noise", "not worth, probably, though it depends how often xt is
# reused", "probably worth, unless the copy costs what it saves"). Blind teachers of four sets gave 0.5-0.7 (five
# verdicts); the answer leans to the key, so it does not cap.
DOUBT_CREDIT = 0.6
DOUBT_ADVERB = re.compile(r"\b(?:probably|likely|i think|i guess|i d guess|i'd guess|my guess|i suspect)\b")
DOUBT_CLAUSE = re.compile(r"\b(?:could(?: \w+)? be|might(?: \w+)? be|depends|depending|unless|wouldn[’']?t rule out|"
                          r"can[’']?t rule out|not sure|hard to tell|want more|can[’']?t be sure|not certain)\b")


def doubted(text: str) -> bool:
    """The answer hedges its one answer with an adverb and a clause that keeps another open."""
    t = text.lower()
    return bool(DOUBT_ADVERB.search(t)) and bool(DOUBT_CLAUSE.search(t))
