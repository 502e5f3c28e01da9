"""Relations on set-up and steps. Part of the claim checker (tracetriage.analyzers.output.claims runs them with the
rest); each reads only the JSON contract (docs/json.md).

- one set-up share per report: where the Next warms up, the Caveat's "N% of the span" of one-time set-up is the
  Next's predicted saving (heldout-user11 hateful_v100_infer: a Caveat of 90%, of the GPU span, beside a Next of
  -47%, of the traced span: two spans, one word);
- no counted step is a fragment: the first or last of the steps the median speaks of is not under a tenth of the
  others' median wall while launching under a tenth of their median kernels (heldout-user11 h2d_pageable_h100: an
  18 µs ProfilerStep#4 tail that launches nothing beside the 1.07 ms step, read as "554.5 µs per step";
  smell-sync-explicit: the op after the loop's last sync, 2.3 µs, counted as its 241st step);
- a construct's share of the idle is the share of the idle it names: where one-time set-up (painted over every
  construct) holds more of the idle than the construct, the share said is of the idle outside the set-up, and says
  so (heldout-user11 rn18_h200_cold: "28% of the idle is inside nn.Module forwards" of a forward spanning the
  whole trace, 71% of its idle charged to set-up first);
- a steady-step figure holds none of the set-up its steps were kept apart for: the median step is no longer than
  the shortest step kept apart as paying set-up;
- a predicted remainder that still holds the cold start the Regime line names says so, with the same share of the
  traced span, and no more set-up than the remainder itself (heldout-user12 decode_5090_sync: "-41% (55.9 ms ->
  32.9 ms)" kept about 24 ms of a lazy module load in its 32.9 ms unsaid).
"""
from __future__ import annotations

import re

from tracetriage.analyzers.analyses.profiler_steps import FRAGMENT_SHARE

_CAVEAT_SETUP = re.compile(r"one-time set-up: first calls of .*?, (\d+|<1)% of the (?:traced span \(host and GPU\)|"
                           r"range's span|span); warm up before profiling")
_SHARE_TOLERANCE = 0.01   # said in whole percents


def caveat_setup_is_the_nexts(said, out: dict) -> list[str]:
    saving = said.get("next.saving") if said is not None else None
    setup = said.get("next.because.setup_share") if said is not None else None
    if saving is None or setup is None or saving["value"] <= 0:
        return []
    for text in (out.get("trace") or {}).get("caveats") or []:
        m = _CAVEAT_SETUP.search(text)
        if m and m.group(1) != "<1" and abs(int(m.group(1)) / 100 - saving["value"]) > _SHARE_TOLERANCE:
            return [f"the Caveat says {m.group(1)}% of the span is one-time set-up, the warm-up Next {saving['said']}"]
    return []


def _steady(cols: dict) -> list[int]:
    """The positions of the steps the summary speaks of (regular, not set-up; else every step not set-up)."""
    setup, regular = cols.get("setup") or [], cols.get("regular") or []
    out = [i for i in range(len(setup)) if regular[i] and not setup[i]]
    return out or [i for i in range(len(setup)) if not setup[i]]


def no_step_is_a_fragment(out: dict) -> list[str]:
    cols = (out.get("steps") or {}).get("per_step") or {}
    walls, kernels = cols.get("wall_us") or [], cols.get("kernels") or []
    steady = _steady(cols)
    if len(steady) < 2:
        return []
    bad = []
    for edge in {steady[0], steady[-1]}:
        rest = sorted(walls[i] for i in steady if i != edge)
        work = sorted(kernels[i] for i in steady if i != edge)
        mid_w, mid_k = rest[len(rest) // 2], work[len(work) // 2]
        if walls[edge] < FRAGMENT_SHARE * mid_w and kernels[edge] < FRAGMENT_SHARE * mid_k:
            bad.append(f"step {edge} ({walls[edge]:.1f} µs, {kernels[edge]} kernels) is a fragment counted as a "
                       f"step beside steps of {mid_w:.1f} µs")
    return bad


def steady_step_holds_no_setup(out: dict) -> list[str]:
    st = out.get("steps") or {}
    cols, median = st.get("per_step") or {}, ((st.get("summary") or {}).get("median_us") or 0.0)
    kept = [w for w, s in zip(cols.get("wall_us") or [], cols.get("setup") or []) if s]
    if kept and median > min(kept):
        return [f"the steady step's median {median:.1f} µs holds a step kept apart as set-up ({min(kept):.1f} µs)"]
    return []


OUTSIDE_SETUP = "of the idle outside the one-time set-up is inside"


def construct_share_is_of_the_idle_it_names(said, out: dict) -> list[str]:
    c = said.get("idle.construct_share") if said is not None else None
    lines = out.get("lines") or []
    if c is None or len(lines) < 3:
        return []
    shares = {x["construct"]: x.get("idle_share") or 0.0 for x in out.get("framework") or []}
    setup = shares.pop("setup", 0.0)
    outside = OUTSIDE_SETUP in lines[2]
    for name, x in shares.items():
        want = x / (1 - setup) if outside and setup < 1 else x
        if x > 0 and abs(c["value"] - want) <= _SHARE_TOLERANCE:
            if not outside and setup >= x:
                return [f"{c['said']} of the idle is said to be inside the {name} construct, which ran through the "
                        f"one-time set-up painted over it ({100 * setup:.0f}% of the idle): not said as of the idle "
                        "outside the set-up"]
            return []
    return [f"the construct's share of the idle, {c['said']}, is no construct's share of the idle it names"]


def remainder_keeps_the_cold_start(said, out: dict) -> list[str]:
    cold = said.get("regime.cold_start_share") if said is not None else None
    if cold is None:
        return []
    kept, base = said.get("next.remainder_setup_us"), said.get("next.baseline_us")
    predicted = said.get("next.predicted_us")
    if base is None or predicted is None:
        return []
    if kept is None:
        return [f"the Regime line says a cold start holds {cold['said']} of the traced span, but the Next's "
                f"prediction ({predicted['said']}) does not say its remainder still holds that set-up"]
    bad = []
    if base["value"] and abs(kept["value"] / base["value"] - cold["value"]) > _SHARE_TOLERANCE:
        bad.append(f"the Next's remainder keeps {kept['said']} of set-up, {100 * kept['value'] / base['value']:.0f}% "
                   f"of its {base['said']}, where the Regime line says the cold start holds {cold['said']}")
    if kept["value"] > predicted["value"]:
        bad.append(f"the Next's remainder ({predicted['said']}) is said to hold {kept['said']} of set-up, more than "
                   "itself")
    return bad


def setup_relations(said, out: dict) -> list[str]:
    """Every relation of this module, for claims.check."""
    return (caveat_setup_is_the_nexts(said, out) + no_step_is_a_fragment(out) + steady_step_holds_no_setup(out)
            + construct_share_is_of_the_idle_it_names(said, out) + remainder_keeps_the_cold_start(said, out))
