"""Relations read from the Next line's words and the output's fields alone (no claim of its own to look up): a fix
recommended beside its own "saves nothing", copies overlapped with compute where no kernel runs. Part of the claim
checker (tracetriage.analyzers.output.claims runs them with the rest)."""
from __future__ import annotations

import re

# "<a lever's words> predicts no saving (0%)" or "... predicts 0%": a fix priced at nothing
_PRICED_AT_NOTHING = re.compile(r"(?:but )?([\w ]+?) predicts (?:no saving \(0%\)|0%)")
# the words each such lever is recommended by, in a Next's own change
_RECOMMENDED_BY = {"pinned memory and async copies": ("pin_memory=True", "non_blocking=True")}


def no_fix_recommended_beside_its_zero(out: dict, lines: list[str]) -> list[str]:
    """The Next line does not recommend a fix that it says, in the same line, predicts no saving: the first-batch
    DataLoader Next asked for pin_memory=True with .to(device, non_blocking=True) and added "pinned memory and
    async copies predicts no saving (0%)"."""
    nx = lines[4] if len(lines) > 4 else ""
    bad = []
    for m in _PRICED_AT_NOTHING.finditer(nx):
        words = m.group(1).strip()
        for lever, asks in _RECOMMENDED_BY.items():
            if words.endswith(lever) and any(a in nx for a in asks):
                bad.append(f"the Next recommends {' / '.join(a for a in asks if a in nx)} and says {lever} predicts "
                           "no saving")
    return bad


_OVERLAP_COMPUTE = ("overlap compute", "overlap the copies with compute")


def no_compute_to_overlap_without_kernels(out: dict, lines: list[str]) -> list[str]:
    """A Next that overlaps copies with compute has kernels to overlap them with (heldout-user7 a100copy_pageable and
    a100copy_pinned, copy benchmarks with no kernel, were told "so copies overlap compute")."""
    if (out.get("kernel_busy_us") or 0.0) > 0 or not any(w in lines[4] for w in _OVERLAP_COMPUTE):
        return []
    return ["the Next overlaps copies with compute, but no kernel runs in the trace"]


def no_bigger_batch_where_launches_scale_with_it(out: dict, lines: list[str]) -> list[str]:
    """No line asks for a bigger batch where the Next is a loop over items or slices (batch_items): each item of a
    bigger batch is one more iteration, one more set of launches (fresh7 cifar_per_sample_augment, a per-image
    augment loop, was told "or more work per launch (bigger batch)")."""
    from tracetriage.analyzers.whatif.levers import BATCH_ITEMS

    if (out.get("next_experiment") or {}).get("whatif_lever") != BATCH_ITEMS:
        return []
    return ["a line asks for a bigger batch, but the Next is a loop over items whose launches grow with the batch"
            for line in lines if "bigger batch" in line][:1]
