"""What the claim checker reads a report's claims with (tracetriage.analyzers.output.claims and its claims_*
relations): the claims by key, the line each key is said on, and the tolerances the relations share."""
from __future__ import annotations

import re

from tracetriage.analyzers.model.verdicts import EXPERIMENT_FOR_CAUSE

LINE_OF = {"measured": 0, "time": 1, "idle": 2, "regime": 3, "next": 4, "waste": 4}
SAID_ZERO = re.compile(r"^[−+]?0(?:\.0+)?(?: |%|$)")
SHARE_TOLERANCE = 0.01   # a share said in whole percents: within a point of its field
NEXTS = ("next", "next.own")   # the Next, and a rank's own fix beside the straggler
CAUSE_OF_KIND = {e.value: c.value for c, e in EXPERIMENT_FOR_CAUSE.items()}   # an idle fix's kind -> its cause
FLOOR_TOLERANCE = 0.02   # the replay rescaled to the traced span by its own miss (predict: baseline / replay)


class Said:
    """A report's claims by key (the first where a key is said twice: a because gives one figure once)."""

    def __init__(self, claims: list[dict]):
        self.all = claims
        self.by_key: dict[str, dict] = {}
        for c in claims:
            self.by_key.setdefault(c["key"], c)

    def get(self, key: str) -> dict | None:
        return self.by_key.get(key)

    def value(self, key: str) -> float | None:
        c = self.by_key.get(key)
        return None if c is None else c["value"]

    def under(self, prefix: str) -> list[dict]:
        return [c for c in self.all if c["key"].startswith(prefix)]


def said_of(out: dict) -> Said:
    return Said(out.get("claims") or [])


def line_of(key: str) -> int:
    return LINE_OF[key.split(".", 1)[0]]
