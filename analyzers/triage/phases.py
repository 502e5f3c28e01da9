"""A prefill+decode trace's two phases: from named ranges (prefill, decode_step) or from the steps' shapes, each
side's pace and bound, the time to first token and the time per token."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses import inference as inference_mod
from tracetriage.analyzers.analyses.inference import Inference, PhasesFrom
from tracetriage.analyzers.analyses.ranges import RangeStats
from tracetriage.analyzers.analyses.roofline import RegimeVerdict
from tracetriage.analyzers.analyses.steps import Outlier
from tracetriage.analyzers.model.verdicts import Cause, Regime


@dataclass(frozen=True)
class Phase:
    """One side of a prefill+decode trace: its named range (None: found from the ops' shapes) and how it is bound."""
    range: str | None
    count: int
    median_wall_us: float
    kernel_busy_us: float
    idle_share: float
    idle_dominant: Cause | None
    regime: Regime
    verdict: RegimeVerdict


@dataclass(frozen=True)
class Phases:
    prefill: Phase
    decode: Phase
    ttft_us: float               # the median request's time to first token
    per_token_us: float          # each round's decode span over its steps (steps overlap when the host runs ahead)
    tokens_per_prefill: int
    found_from: PhasesFrom = PhasesFrom.RANGES
    ttft_p90_us: float = 0.0
    per_token_median_us: float = 0.0   # inter-token latency: a decode step's token after the one before it
    per_token_p90_us: float = 0.0
    requests: int = 1                  # prefills
    mixed_steps: int = 0               # continuous batching: steps with prefill and decode tokens together
    batch: int | None = None           # sequences per decode step, where the shapes say it
    prompt_tokens: int | None = None   # tokens per sequence in the first prefill
    decode_inferred: bool = False      # decode recorded no shapes (CUDA-graph replays): taken from the structure
    decode_outlier: Outlier | None = None   # the decode step far slower than the median, and why



def phases_of_ranges(rng: tuple[RangeStats, ...], verdicts: dict[str, RegimeVerdict]) -> Phases | None:
    by = {r.name: r for r in rng}
    pre = by.get("prefill")
    dec = next((by[n] for n in ("decode_step", "decode") if n in by), None)
    if pre is None or dec is None:
        return None

    def phase(r: RangeStats) -> Phase:
        v = verdicts[r.name]
        return Phase(r.name, r.count, round(r.median_wall_us, 1), round(r.kernel_busy_us, 1), round(r.idle_share, 4),
                     r.idle_dominant, v.regime, v)

    pre_walls = (pre.windows[1] - pre.windows[0]) / 1e3
    itl = inference_mod.inter_token_ns(pre.windows, dec.windows) / 1e3
    return Phases(phase(pre), phase(dec), ttft_us=round(pre.median_wall_us, 1),
                  per_token_us=round(per_token(pre, dec), 1),
                  tokens_per_prefill=max(1, dec.count // max(1, pre.count)),
                  ttft_p90_us=round(float(np.percentile(pre_walls, 90)), 1),
                  per_token_median_us=round(float(np.median(itl)), 1) if len(itl) else 0.0,
                  per_token_p90_us=round(float(np.percentile(itl, 90)), 1) if len(itl) else 0.0, requests=pre.count)


def phases_of_shapes(inf: Inference | None) -> Phases | None:
    """Prefill and decode found from the steps' shapes (no named ranges)."""
    if inf is None:
        return None

    def phase(p) -> Phase:
        return Phase(None, len(p.steps), round(p.median_wall_ns / 1e3, 1), round(p.kernel_busy_ns / 1e3, 1),
                     round(p.idle_share, 4), p.idle_dominant, p.verdict.regime, p.verdict)

    d = inf.decode_summary
    ttft = np.array(inf.ttft_ns, np.float64) / 1e3
    return Phases(phase(inf.prefill), phase(inf.decode), ttft_us=round(float(np.median(ttft)), 1),
                  per_token_us=round(inf.decode.wall_ns / len(inf.decode.steps) / 1e3, 1),
                  tokens_per_prefill=max(1, len(inf.decode.steps) // len(inf.ttft_ns)),
                  found_from=PhasesFrom.SHAPES, ttft_p90_us=round(float(np.percentile(ttft, 90)), 1),
                  per_token_median_us=round(d.median_ns / 1e3, 1), per_token_p90_us=round(d.p90_ns / 1e3, 1),
                  requests=len(inf.ttft_ns), mixed_steps=len(inf.mixed), batch=inf.batch,
                  prompt_tokens=inf.prompt_tokens, decode_inferred=inf.decode_inferred, decode_outlier=d.outlier)


def per_token(pre: RangeStats, dec: RangeStats) -> float:
    """With several prefill+decode rounds, measure each round's decode span separately."""
    ps = np.sort(pre.windows[0])
    s, e = dec.windows
    spans = []
    for i in range(len(ps)):
        lo = ps[i]
        hi = ps[i + 1] if i + 1 < len(ps) else np.iinfo(np.int64).max
        m = (s >= lo) & (s < hi)
        if m.any():
            spans.append((float(e[m].max() - s[m].min()) / 1e3, int(m.sum())))
    tot_t = sum(t for t, _ in spans)
    tot_n = sum(n for _, n in spans)
    return tot_t / tot_n if tot_n else 0.0
