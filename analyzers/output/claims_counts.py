"""Relations on what a report counts (steps, launches) and on the Regime's own numbers. Part of the claim checker
(tracetriage.analyzers.output.claims runs them with the rest); each reads only the JSON contract (docs/json.md).

- the steps said fit the span they were found in: steps x the median step is no longer than the steps' windows
  (and the GPU span) give or take STEPS_FIT_TOLERANCE (19 steps of 77 ms said of a 775 ms span: every other
  "step" an empty window between two back-to-back syncs);
- the optimizer's calls beside its launches are its steps (Optimizer.step ranges), not its steps and zero_grads;
- the call sites said of a Time-line op ("10 HtoD from the `.to()` ..., 5 DtoH from the `.cpu()` ...") count no more
  calls than the op made (hotspots[i].calls) nor GPU activities than it ran (hotspots[i].kernels): each call is
  charged to one frame, once however many activities it launched;
- the headroom of faster kernels ("if every kernel took half as long the traced span (host and GPU) would fall 27%,
  114.1 ms → 83.1 ms") saves no more than half the kernels' busy time: only kernel time shrinks (heldout-user13 arc
  said "the span would fall 27%" of a 78.6 ms GPU span, of which the 114.1 ms traced span was the base);
- a memory-bound Regime states an intensity below the ridge it states, a compute-bound one at or above it (the
  average is over the ops of the verdict's bound: fresh8's ctr read "memory-bound ... 80 FLOP/byte against a
  fp32 ridge of 19.9", the FLOPs of a few GEMMs over every op's bytes).
"""
from __future__ import annotations

STEPS_FIT_TOLERANCE = 0.25   # the median against the mean: a loop whose steps vary still fits within a quarter


def steps_fit_the_span(out: dict) -> list[str]:
    """steps.count x steps.summary.median_us <= the extent of the steps' windows (or the GPU span, the longer)."""
    st = out.get("steps") or {}
    n, median = st.get("count") or 0, ((st.get("summary") or {}).get("median_us") or 0.0)
    if n < 2 or median <= 0:
        return []
    cols = st.get("per_step") or {}
    starts, walls = cols.get("start_us") or [], cols.get("wall_us") or []
    extent = (starts[-1] + walls[-1] - starts[0]) if starts and walls else 0.0
    room = max(extent, out.get("span_us") or 0.0)
    if n * median <= room * (1 + STEPS_FIT_TOLERANCE):
        return []
    return [f"{n} steps of {median / 1e3:.1f} ms (median) do not fit the {room / 1e3:.1f} ms they were found in"]


def optimizer_calls_are_its_steps(out: dict) -> list[str]:
    """The optimizer's calls said beside its launches ("82 launches in 10 calls") are no more than its
    Optimizer.step ranges counted on the Time line's ranges (zero_grad's ranges are no calls of the step)."""
    stepped = sum(r.get("count") or 0 for r in out.get("ranges") or [] if str(r.get("name", "")).startswith(
        "Optimizer.step#"))
    opt = next((x for x in out.get("framework") or [] if x.get("construct") == "optimizer"), None)
    if not stepped or opt is None or (opt.get("calls") or 0) <= stepped:
        return []
    return [f"the optimizer is said to run {opt['calls']} calls, but its Optimizer.step ranges ran {stepped} times"]


def regime_intensity_on_its_side(said, out: dict) -> list[str]:
    """regime.intensity < regime_detail.ridge where the Regime is memory-bound, >= where compute-bound."""
    c = said.get("regime.intensity") if said is not None else None
    detail = out.get("regime_detail") or {}
    ridge, regime = detail.get("ridge"), detail.get("regime")
    if c is None or not ridge or regime not in ("memory", "compute"):
        return []
    if (c["value"] < ridge) == (regime == "memory"):
        return []
    return [f"a {regime}-bound Regime states its ops average {c['said']} FLOP/byte against a ridge of {ridge:.3g}"]


SITES_ROUNDING = 1.0    # each site's calls are rounded apart: two sites of 2.5 calls each may say 3 + 3 of 5


def sites_within_their_op(said, out: dict) -> list[str]:
    """The counts claimed as time.sites.I add up to no more than hotspots[I].calls (the parts of a total never
    exceed it: gp_streams said 2,000 + 2,000 of aten::mm's 2,000 calls, each site's GEMMs and memsets counted), nor
    than hotspots[I].kernels, the GPU activities it ran."""
    if said is None:
        return []
    sums: dict[int, float] = {}
    n_sites: dict[int, int] = {}
    for c in said.under("time.sites."):
        i = int(c["key"].rsplit(".", 1)[1])
        sums[i] = sums.get(i, 0.0) + c["value"]
        n_sites[i] = n_sites.get(i, 0) + 1
    hot = out.get("hotspots") or []
    out_lines = []
    for i, n in sorted(sums.items()):
        name = hot[i]["name"] if i < len(hot) else f"op {i}"
        calls = (hot[i].get("calls") or 0) if i < len(hot) else 0
        kernels = (hot[i].get("kernels") or 0) if i < len(hot) else 0
        if n > calls + SITES_ROUNDING * (n_sites[i] - 1):
            out_lines.append(f"the Time line's call sites of {name} count {n:.0f} calls, more than the {calls} "
                             "it made")
        elif n > kernels:
            out_lines.append(f"the Time line's call sites of {name} count {n:.0f} GPU activities, more than the "
                             f"{kernels} it ran")
    return out_lines


def headroom_within_half_the_kernels(said, out: dict) -> list[str]:
    """next.headroom.saving x next.headroom.baseline_us <= kernel_busy_us / 2 (a microsecond of rounding aside)."""
    fall = said.value("next.headroom.saving") if said is not None else None
    base = said.value("next.headroom.baseline_us") if said is not None else None
    busy = out.get("kernel_busy_us") or 0.0
    if fall is None or base is None or fall * base <= busy / 2 + 1.0:
        return []
    return [f"halving every kernel is said to save {fall * base / 1e3:.1f} ms, more than half the kernels' "
            f"{busy / 1e3:.1f} ms"]


def count_relations(said, out: dict, lines: list[str]) -> list[str]:
    """Every relation of this module, for claims.check."""
    return (steps_fit_the_span(out) + optimizer_calls_are_its_steps(out)
            + regime_intensity_on_its_side(said, out) + sites_within_their_op(said, out)
            + headroom_within_half_the_kernels(said, out))
