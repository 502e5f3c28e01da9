"""A few large gaps that hold most of a cause's idle, said by count, size and share: a median hides them (heldout-user9
vllm_mi300x: '29 gaps with a median of 421.5 µs' where 10 gaps of 22-28 ms, one per step, held nearly all of the host
work). In any trace the construct is a cause's gaps split into a few long ones (one per step: the host's scheduling,
a per-step Python stretch) and many short ones; model.large_gaps finds them (5x the median or longer, at most half
of the gaps, holding 80% of the idle, of one size class). It does not fire on gaps of one size (a steady loop's equal
stretches) nor where one gap holds most (gaps_phrase says that one, a single gap being no "few")."""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model.large_gaps import few_large
from tracetriage.analyzers.model.units import duration_ns, integer, share
from tracetriage.analyzers.model.verdicts import CAUSES
from tracetriage.analyzers.voice.analysis import Analysis
from tracetriage.analyzers.voice.said import claim


def few_large_gaps(a: Analysis) -> str:
    """'; 10 of them, 22.3 ms to 28.1 ms each, hold 94% of it' for the dominant cause's gaps, or ''."""
    dom = a.dominant
    if dom is None or not a.devices:
        return ""
    top = max(a.devices, key=lambda d: d.idle_ns)
    g = top.gaps
    m = g.cause == CAUSES.index(dom)
    if g.piece_of is not None:    # pieces of one gap cut by windows: the gap is what the user sees
        return ""
    dur = np.sort((g.end[m] - g.start[m]).astype(np.int64))[::-1]
    big = few_large(dur)
    if big is None:
        return ""
    k, held, total = int(big.sum()), int(dur[big].sum()), int(dur.sum())
    return (f"; {claim('idle.large_gaps', k, integer(k))} of them, {duration_ns(int(dur[k - 1]))} to "
            f"{duration_ns(int(dur[0]))} each, hold {claim('idle.large_gaps_share', held / total, share(held / total))}"
            " of it")
