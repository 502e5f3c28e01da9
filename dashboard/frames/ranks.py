"""The Ranks page's frames: the directory's multi-rank report, a row per rank, and each rank's collective
time per step."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from tracetriage.analyzers.voice import common as common_words


@dataclass(frozen=True)
class RanksView:
    lines: list[str]                # what `tracetriage report DIR` prints
    straggler_line: str
    straggler_rank: int | None
    ranks: pd.DataFrame             # rank, file, rank_from, idle_share, idle_cause, kernel_busy_ms, span_ms,
                                    # collectives, collective_ms, collective_step_ms, host_step_ms
    steps: pd.DataFrame             # rank, step, collective_ms: each rank's collective time per step
    caveats: list[str]


def ranks(directory: Path, progress=None) -> RanksView:
    """The directory's multi-rank report (tracetriage.analyzers.runs.pool.report_object); TraceError with one line."""
    from tracetriage.analyzers.runs.pool import report_object
    from tracetriage.analyzers.voice import ranks as rank_words

    rr = report_object(Path(directory), progress=progress)
    s = rr.straggler
    found = getattr(s, "rank", None) is not None
    stats = {x.row.rank: x for x in s.stats} if found else {}
    rows, steps = [], []
    for r in rr.rows:
        c = r.r.collectives
        stat = stats.get(r.rank)
        rows.append({"rank": r.rank, "file": r.path.name, "rank_from": r.how, "idle_share": r.r.idle_share,
                     "idle_cause": common_words.cause_words(r.r.dominant), "kernel_busy_ms": r.r.kernel_busy_us / 1e3,
                     "span_ms": r.r.span_us / 1e3, "collectives": c.calls, "collective_ms": c.total_ns / 1e6,
                     "collective_step_ms": stat.per_step_med / 1e6 if stat and stat.per_step_med is not None
                     else np.nan,
                     "host_step_ms": stat.host_step / 1e6 if stat and stat.host_step is not None else np.nan,
                     "straggler": found and r.rank == s.rank})
        steps += [{"rank": f"rank {r.rank}", "step": i + 1, "collective_ms": ns / 1e6}
                  for i, ns in enumerate(c.per_step_ns)]
    return RanksView(lines=rank_words.ranks_lines(rr), straggler_line=rank_words.straggler_line(s),
                     straggler_rank=s.rank if found else None, ranks=pd.DataFrame(rows),
                     steps=pd.DataFrame(steps, columns=["rank", "step", "collective_ms"]),
                     caveats=rank_words.ranks_caveats(rr))
