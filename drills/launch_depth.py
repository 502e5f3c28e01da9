"""How far an answer to a launch-bound trace goes: the whole lever (CUDA graphs, more work per launch, all the work
in one call) or fusion alone, which trims some launches and leaves the gap before each of the rest.

    launch_depth("torch.compile", offered_as_options=False)           -> FUSION_FOR_LAUNCHES
    launch_depth("fuse the mul and add to halve the bytes", False)     -> FUSION_FOR_BYTES
    launch_depth("CUDA graphs or torch.compile", True)                 -> FUSION_FOR_LAUNCHES (a hedge: the lesser)
    launch_depth("torch.compile, then CUDA graphs", False)             -> None (the whole lever)

The words are drills/vocab.toml's [lever.cut_launches]: `fuses` (what cuts launches only by fusing) and
`for_bytes` (a fusion's reason, when it is the bytes).
"""
from __future__ import annotations

import re

from tracetriage.drills.meaning import clauses, phrase_hits
from tracetriage.drills.textmatch import phrases, tables

FUSION_FOR_LAUNCHES = 0.6    # fusion alone where the idle is launch gaps: it trims some launches, not the gaps
FUSION_FOR_BYTES = 0.3       # ... and fusing "to cut the bytes": the right tool for the wrong reason
OPTION_SPLIT = re.compile(r"\b(?:or|either|maybe|perhaps|possibly)\b")
THEN = re.compile(r"\b(?:then|followed by|and after that|on top)\b")


def launch_depth(text: str, offered_as_options: bool) -> float | None:
    """Where the Next is cutting launches (graphs, more work per launch), an answer that only fuses earns
    FUSION_FOR_LAUNCHES, FUSION_FOR_BYTES when its reason is the bytes; graphs offered *or* fusion earns the lesser
    of the two (a hedge between a right and a partial lever); None where the answer holds the whole lever."""
    fuses, for_bytes = phrases("lever", "cut_launches", "fuses"), phrases("lever", "cut_launches", "for_bytes")
    strong = [p for p in tables("lever", "say")["cut_launches"] if p not in fuses]
    def kinds(part: str) -> set:
        words = {"strong": tuple(strong), "fuses": tuple(fuses)}
        return {k for c in clauses(part) for k, _, _ in phrase_hits(c, words)}

    if kinds(text) == {"fuses"}:
        bytes_reason = any(phrase_hits(c, {"b": tuple(for_bytes)}) for c in clauses(text))
        return FUSION_FOR_BYTES if bytes_reason else FUSION_FOR_LAUNCHES
    # "cut the launch count: a CUDA graph or fuse the mul+add": the head before the colon commits to the whole lever,
    # what follows are its tools (a blind teacher gave it full marks)
    head = text.split(":", 1)[0] if ":" in text else ""
    if head and "strong" in kinds(head):
        return None
    # "CUDA graphs or torch.compile": one of the options offered only fuses
    sequence = THEN.search(text.lower())        # "torch.compile or a Triton kernel, then CUDA graphs": a plan
    options = [kinds(o) for o in OPTION_SPLIT.split(text.lower())] if offered_as_options and not sequence else []
    if any(o == {"fuses"} for o in options) and any("strong" in o for o in options):
        return FUSION_FOR_LAUNCHES
    return None


