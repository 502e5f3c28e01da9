"""The course's vocabulary (drills/vocab.toml) as tables of phrases per answer class, and free text read against them.

    tables("cause", "name")                        -> {"launch_overhead": [...], "host_work": [...], ...}
    reading("not a sync", tables("cause", "name")) -> Reading(asserted=(), denied={"synchronization"}, ...)

The table is data, not code: a new synonym is one line in vocab.toml; how a sentence is read (negation,
hedges, code) is tracetriage.drills.meaning.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from tracetriage.drills.meaning import Reading, read, words_of
from tracetriage.drills.tomlread import tomllib

VOCAB_PATH = Path(__file__).with_name("vocab.toml")
VOCAB_EXTRA = (Path(__file__).with_name("vocab_ladder.toml"),)   # the ladder's rungs (tracetriage.drills.ladder)


@lru_cache(maxsize=1)
def vocab() -> dict:
    with open(VOCAB_PATH, "rb") as f:
        out = tomllib.load(f)
    for extra in VOCAB_EXTRA:
        with open(extra, "rb") as f:
            out.update(tomllib.load(f))       # groups of their own: none of vocab.toml's is redefined
    return out


def normalise(text: str) -> str:
    return words_of(text)


def phrases(group: str, cls: str, field: str) -> list[str]:
    return list(vocab().get(group, {}).get(cls, {}).get(field, []))


@lru_cache(maxsize=64)
def _tables(group: str, field: str, only: tuple[str, ...] | None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple((cls, tuple(t.get(field, []))) for cls, t in vocab().get(group, {}).items()
                 if t.get(field) and (only is None or cls in only))


def tables(group: str, field: str, only: tuple[str, ...] | None = None) -> dict[str, tuple[str, ...]]:
    """Each class of a group with the phrases of one field (only: those classes)."""
    return dict(_tables(group, field, only))


def reading(text: str, table: dict, removal: dict | None = None, prefer: frozenset = frozenset(),
            first: frozenset = frozenset(), lead: bool = True, then: frozenset = frozenset()) -> Reading:
    """`table` from tables(); the vocabulary's generic words (`weak`) name a class only beside no other's own."""
    return read(text, table, removal, prefer, {c: _weak().get(c, ()) for c in table}, first, lead, then)


@lru_cache(maxsize=1)
def _weak() -> dict[str, tuple[str, ...]]:
    """Each class's generic words (vocab.toml `weak`): they name the class when they stand alone, and are a minor
    mention beside another class's own words ("the queue drains because Python reads back a scalar": a sync)."""
    return {cls: tuple(t.get("weak", ())) for group in vocab().values() for cls, t in group.items()
            if isinstance(t, dict) and t.get("weak")}
