"""The what-if's words: `tracetriage whatif`'s table and each lever's assumptions in one line."""
from __future__ import annotations

from analyzers.model.units import duration_ns, saving_pct
WHATIF_SOURCE = {"trace": "measured in this trace", "ceilings": "measured ceilings (tracetriage capture ceilings)",
                 "datasheet": "datasheet PCIe x16 link", "guess": "assumed (no measurement, unknown device)",
                 "reference": "measured on an H200 under torch.profiler (traces/gpt-graphs.json.gz)"}


def assumption(a) -> str:
    """A lever's assumptions in one line (whatif.Assumption)."""
    if a.lever == "remove_syncs":
        where = f"syncs called from {a.only}" if a.only else "syncs"
        if a.count == 0:
            return f"no blocking {where} in this trace: nothing to remove"
        return (f"the host no longer waits in {where}: sync calls vanish (with the Python that called them "
                f"directly), copies to the host return after one call's cost ({duration_ns(a.call_ns)}, the median "
                "launch call here); the GPU work stays")
    if a.lever == "no_host_work":
        if a.count == 0:
            return (f"no host stretch of {duration_ns(a.long_ns)} or more (10 launch calls) that issues no GPU work: "
                    "nothing to remove")
        return (f"host stretches that issue no GPU work and last {duration_ns(a.long_ns)} or more (10 launch calls) "
                "vanish; dispatch of the ops stays")
    if a.lever == "cuda_graphs":
        gap = "the minimum gap between queued kernels in this trace" if a.gap_measured else \
            "assumed; no queued kernels here"
        return (f"one graph launch per sync-free stretch at {duration_ns(a.per_kernel_ns)} per kernel "
                f"({WHATIF_SOURCE[a.source]}); dispatch and launch calls vanish; kernels run back to back "
                f"{duration_ns(a.min_gap_ns)} apart ({gap})")
    if a.lever == "async_copies":
        if a.count == 0:
            return "no pageable copy in this trace: nothing to pin or overlap"
        return (f"pageable copies become pinned at {a.h2d_gbps:.0f} GB/s to the device ({WHATIF_SOURCE[a.h2d_source]}) "
                f"and {a.d2h_gbps:.0f} GB/s back ({WHATIF_SOURCE[a.d2h_source]}); host-to-device ones run on a side "
                "stream, each consumer waiting for its copy; device-to-host ones still block the host that reads them")
    keeps = "half as long" if a.kernel_scale == 0.5 else f"{a.kernel_scale:.2f} of its time"
    return f"every kernel takes {keeps}; copies, memsets, launches and host time stay"


def whatif_table(w) -> str:
    """`tracetriage whatif`: one row per lever, best first, and each lever's assumption below it."""
    err = (w.replay_ns - w.baseline_ns) / w.baseline_ns * 100 if w.baseline_ns else 0.0
    lines = [f"{w.path}: traced span {duration_ns(w.baseline_ns)} (the unchanged replay gives "
             f"{duration_ns(w.replay_ns)}, {err:+.1f}%)", "",
             f"  {'lever':<14}{'predicted':>11}{'ratio':>8}{'saving':>9}"]
    for p in w.levers:
        lines.append(f"  {p.lever:<14}{duration_ns(p.predicted_ns):>11}{p.predicted_ratio:>8.2f}"
                     f"{saving_pct(p.saving_ns, w.baseline_ns):>9}")
    lines.append("")
    lines += [f"  {p.lever}: {assumption(p.assumption)}" for p in w.levers]
    return "\n".join(lines)
