"""Claims as data: each figure a report's sentence states is recorded, as the sentence is built, with the field it
comes from, so that the claim checker (tracetriage.analyzers.output.claims) verifies the relations between the
fields, not the words:

    with recorded() as said:
        lines = five_lines(a)          # each builder writes claim("next.saving", 0.26, "−26%") where it says "−26%"
    said                                # [Claim("next.saving", 0.26, "−26%"), ...]: `report --json`'s "claims"

A claim's key names its line and what the figure is ("idle.share", "next.because.setup_share", "waste.saving"); its
value is the field's, unrounded, in the field's unit (shares as fractions, times in µs, counts); `said` is the text
the sentence prints for it. A claim records no verdict: the checker decides whether they agree. Outside `recorded`,
claim() only returns its text. (The phrases whose wording is itself a claim are tracetriage.analyzers.voice.claims.)
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Claim:
    key: str        # "<line>.<what>": measured, idle, regime, next, waste (the Next line holds next and waste)
    value: float    # the field's value, unrounded, in its unit (a share as a fraction, µs, a count)
    said: str       # the text the sentence prints for it ("" where the claim is a phrase, not a figure)


_RECORD: ContextVar[list[Claim] | None] = ContextVar("tracetriage_claims", default=None)


def claim(key: str, value: float, said: str) -> str:
    """Record that a sentence states `value` (the field `key` names) as `said`; returns `said`."""
    rec = _RECORD.get()
    if rec is not None:
        rec.append(Claim(key, float(value), said))
    return said


@contextmanager
def recorded() -> Iterator[list[Claim]]:
    """The claims of every sentence built inside the block."""
    out: list[Claim] = []
    token = _RECORD.set(out)
    try:
        yield out
    finally:
        _RECORD.reset(token)


@contextmanager
def kept_as(prefix: str, drop: tuple[str, ...] = ()) -> Iterator[None]:
    """Sentences built inside the block are said as part of another (a rank's own fix inside the straggler's
    Next): their claims are kept under `prefix` ("next.own.saving"), but for those under `drop` (a part not said)."""
    outer = _RECORD.get()
    inner: list[Claim] = []
    token = _RECORD.set(inner if outer is not None else None)
    try:
        yield
    finally:
        _RECORD.reset(token)
    if outer is not None:
        outer += [Claim(f"{prefix}.{c.key.split('.', 1)[1]}", c.value, c.said) for c in inner
                  if not c.key.startswith(drop)]
