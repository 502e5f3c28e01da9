"""Every sentence `tracetriage whatif` shows a user: assumptions, labels, errors.

Kept in one module so it can be folded into the project's one voice (analyzers.voice).
"""
from __future__ import annotations

SOURCE = {"trace": "measured in this trace", "ceilings": "measured ceilings (tracetriage capture ceilings)",
          "datasheet": "datasheet PCIe x16 link", "guess": "assumed (no measurement, unknown device)",
          "reference": "measured on an H200 under torch.profiler (traces/gpt-graphs.json.gz)"}


def _us(ns: float) -> str:
    return f"{ns / 1e3:.1f} µs"


def assume_remove_syncs(only: str | None, call_ns: int, n: int) -> str:
    where = f"syncs called from {only}" if only else "syncs"
    if n == 0:
        return f"no blocking {where} in this trace: nothing to remove"
    return (f"the host no longer waits in {where}: sync calls vanish (with the Python that called them "
            f"directly), copies to the host return after one call's cost ({_us(call_ns)}, the median launch call "
            "here); the GPU work stays")


def assume_no_host_work(long_ns: int, n: int) -> str:
    if n == 0:
        return f"no host stretch of {_us(long_ns)} or more (10 launch calls) that issues no GPU work: nothing to remove"
    return (f"host stretches that issue no GPU work and last {_us(long_ns)} or more (10 launch calls) vanish; "
            "dispatch of the ops stays")


def assume_cuda_graphs(per_kernel_ns: int, source: str, min_gap_ns: int, gap_measured: bool) -> str:
    gap = "the minimum gap between queued kernels in this trace" if gap_measured else "assumed; no queued kernels here"
    return (f"one graph launch per sync-free stretch at {_us(per_kernel_ns)} per kernel ({SOURCE[source]}); "
            f"dispatch and launch calls vanish; kernels run back to back {_us(min_gap_ns)} apart ({gap})")


def assume_async_copies(h2d_gbps: float, h2d_src: str, d2h_gbps: float, d2h_src: str, n: int) -> str:
    if n == 0:
        return "no pageable copy in this trace: nothing to pin or overlap"
    return (f"pageable copies become pinned at {h2d_gbps:.0f} GB/s to the device ({SOURCE[h2d_src]}) and "
            f"{d2h_gbps:.0f} GB/s back ({SOURCE[d2h_src]}); host-to-device ones run on a side stream, each "
            "consumer waiting for its copy; device-to-host ones still block the host that reads them")


def assume_kernels_2x() -> str:
    return "every kernel takes half as long; copies, memsets, launches and host time stay"


def unknown_lever(name: str, levers) -> str:
    return f"no lever named {name!r}; choose from: {', '.join(levers)}"


def no_such_op(op: str, sync_ops: list[str]) -> str:
    hint = f"ops that wait in a sync here: {', '.join(sync_ops)}" if sync_ops else "no op here waits in a sync"
    return f"--only {op}: no op of that name in the trace ({hint})"


def no_gpu(path: str) -> str:
    return (f"{path}: no GPU activity in the trace, so there is no GPU timeline to replay; capture with "
            "ProfilerActivity.CUDA on a GPU machine")


def only_needs_remove_syncs() -> str:
    return "--only limits remove_syncs; add --lever remove_syncs (or leave --lever out)"


TABLE_HEADER = ("lever", "predicted", "ratio", "saving", "assumes")


def table_title(path: str, baseline_ns: int, replay_ns: int) -> str:
    err = (replay_ns - baseline_ns) / baseline_ns * 100 if baseline_ns else 0.0
    return (f"{path}: traced span {baseline_ns / 1e6:.2f} ms (the unchanged replay gives {replay_ns / 1e6:.2f} ms, "
            f"{err:+.1f}%)")


def ms(ns: float) -> str:
    return f"{ns / 1e6:.2f} ms"


def saving(ns: float, baseline_ns: float) -> str:
    pct = round(-ns / baseline_ns * 100) if baseline_ns else 0
    return f"{pct:+d}%" if pct else "0%"


def table(w) -> str:
    """The default view of a WhatIf: one row per lever, best first, and each lever's assumption below it."""
    lines = [table_title(w.path, w.baseline_ns, w.replay_ns), ""]
    lines.append(f"  {'lever':<14}{'predicted':>11}{'ratio':>8}{'saving':>9}")
    for p in w.levers:
        cut = saving(p.saving_ns, w.baseline_ns)
        lines.append(f"  {p.lever:<14}{ms(p.predicted_ns):>11}{p.predicted_ratio:>8.2f}{cut:>9}")
    lines.append("")
    for p in w.levers:
        lines.append(f"  {p.lever}: {p.assumptions}")
    return "\n".join(lines)
