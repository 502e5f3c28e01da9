"""Claim relations bounded by the idle a fix removes, and the Regime line's split of kernel time with no cost model.

- Removing syncs overlaps host work with GPU work only where the GPU idled: the Idle line's "removing the syncs
  overlaps X" is at most the idle (heldout-user9 vllm_h100: "overlaps 40.3 ms" beside 28.6 ms of idle, the rest the
  host's time after the profiler's last kernel). (A Next's prediction may pass the idle: a first iteration's host work
  before its first launch is outside the GPU span, and measured so: triage.next_experiment.priced_beyond_the_idle.)
- Each share of the Regime line's "no cost model" split equals its field (regime_detail.uncosted_why_us over their
  sum), and the shares said add up to no more than the whole (heldout-user9 vllm_h100: "no shapes 57% / graph replays
  43%" where the replays held 57%).
"""
from __future__ import annotations

IDLE_SLACK = 1.1          # triage.next_experiment.IDLE_SLACK: the replay's error past the idle
SLACK_US = 100.0          # ... and 0.1 ms
SPLIT_TOLERANCE = 0.01    # a share said in whole percents


def within_the_idle(said, out: dict) -> list[str]:
    idle = out.get("idle_us")
    if idle is None:
        return uncosted_split_is_its_fields(said, out)
    bad = []
    c = said.get("idle.syncs.overlap_us")
    if c is not None and c["value"] > IDLE_SLACK * idle + SLACK_US:
        bad.append(f"the Idle line says removing the syncs overlaps {c['said']}, more than the whole idle "
                   f"({idle:.1f} µs)")
    return bad + uncosted_split_is_its_fields(said, out)


def uncosted_split_is_its_fields(said, out: dict) -> list[str]:
    why = (out.get("regime_detail") or {}).get("uncosted_why_us") or {}
    tot = sum(why.values())
    claims = said.under("regime.uncosted_why.")
    bad = []
    for c in claims:
        name = c["key"].rsplit(".", 1)[1]
        field = why.get(name, 0.0) / tot if tot else 0.0
        if abs(c["value"] - field) > SPLIT_TOLERANCE:
            bad.append(f"the Regime line says {c['said']} of the uncosted kernel time is {name}, its field is "
                       f"{100 * field:.1f}%")
    if sum(c["value"] for c in claims) > 1 + SPLIT_TOLERANCE:
        bad.append("the Regime line's uncosted split adds up to more than the whole")
    return bad
