"""Free text against the course's vocabulary (drills/vocab.toml): which answer classes a text uses.

    classes_in("use CUDA graphs (reduce-overhead)", "cause", "experiment")  -> {"launch_overhead"}
    class_score("pin memory", "data_transfer", "cause", "experiment")       -> 1.0

The table is data, not code: a new synonym is one line in vocab.toml.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from drills.tomlread import tomllib

VOCAB_PATH = Path(__file__).with_name("vocab.toml")
HEDGE = 0.5   # the key's class and another one: half credit


@lru_cache(maxsize=1)
def vocab() -> dict:
    with open(VOCAB_PATH, "rb") as f:
        return tomllib.load(f)


def normalise(text: str) -> str:
    return " " + re.sub(r"\s+", " ", re.sub(r"[^a-z0-9.]+", " ", text.lower())).strip() + " "


@lru_cache(maxsize=4096)
def _pattern(phrase: str) -> re.Pattern:
    prefix = phrase.endswith("*")
    body = re.escape(normalise(phrase.rstrip("*")).strip())
    return re.compile(r"(?<![a-z0-9])" + body + (r"[a-z0-9]*" if prefix else r"(?![a-z0-9])"))


def phrases(group: str, cls: str, field: str) -> list[str]:
    return list(vocab().get(group, {}).get(cls, {}).get(field, []))


def hits(text: str, group: str, field: str) -> dict[str, set[str]]:
    """For each class of the group, the phrases of `field` the text uses. A match inside a longer match
    of another class does not count ("cpu" in "cpu bound" is host work, not a `.cpu()` sync)."""
    t = normalise(text)
    found = []   # (class, phrase, start, end)
    for cls, table in vocab().get(group, {}).items():
        for p in table.get(field, []):
            found += [(cls, p, m.start(), m.end()) for m in _pattern(p).finditer(t)]
    out: dict[str, set[str]] = {}
    for cls, p, s, e in found:
        inside = any(c2 != cls and s2 <= s and e <= e2 and (e2 - s2) > (e - s) for c2, _, s2, e2 in found)
        if not inside:
            out.setdefault(cls, set()).add(p)
    return out


def classes_in(text: str, group: str, field: str) -> set[str]:
    """The classes the text speaks of; a phrase shared by two classes decides neither."""
    h = hits(text, group, field)
    if not h:
        return set()
    shared = {p for c in h for p in h[c] if sum(p in h[d] for d in h) > 1}
    return {c for c, ps in h.items() if ps - shared} or ({next(iter(h))} if len(h) == 1 else set())


def class_score(text: str, key: str, group: str, field: str) -> tuple[float, set[str]]:
    """1 when the text uses the key's class alone, HEDGE with others too, 0 otherwise; and the classes found."""
    h = hits(text, group, field)
    found = classes_in(text, group, field)
    if key not in h:
        return 0.0, found
    others = found - {key}
    return (HEDGE if others else 1.0), found | {key}
