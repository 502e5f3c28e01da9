"""HTA's per-stream idle breakdown beside ours (`report --hta`): the words of the one comparison the CLI prints."""
from __future__ import annotations

from tracetriage.analyzers.model.units import duration_ns, duration_us, integer
from tracetriage.analyzers.voice.analysis import Analysis
from tracetriage.analyzers.voice.common import CAUSE_WORDS


def hta_text(hta: dict, analysis: Analysis) -> str:
    """HTA's per-stream idle breakdown beside ours (`report --hta`)."""
    if "error" in hta:
        return f"HTA: unavailable: {hta['error']}"
    lines = [f"HTA {hta.get('hta_version', '?')} beside ours (per stream; host_wait lumps every host cause together):"]
    for rank, r in hta.get("ranks", {}).items():
        activity = r.get("gpu_activity_us_total", r["kernel_time_us_total"])
        lines.append(f"  rank {rank}: GPU activity {duration_us(activity)} "
                     f"(HTA's own kernel-breakdown total: {duration_us(r['kernel_time_us_total'])}; it also counts "
                     "CPU events that carry a stream field)")
        for s, n in r.get("streams", {}).items():
            lines.append(f"    stream {s}: idle {duration_us(n['idle_us'])} = "
                         f"host_wait {duration_us(n['host_wait_us'])} + "
                         f"kernel_wait {duration_us(n['kernel_wait_us'])} + other {duration_us(n['other_us'])}")
        ls = r.get("launch", {})
        if ls:
            delay = ls.get("median_launch_delay_us")
            lines.append(f"    launches: {integer(ls.get('count') or 0)} paired, median launch delay "
                         f"{duration_us(delay) if delay is not None else 'none'}, "
                         f"{integer(ls.get('short_kernels') or 0)} short kernels, "
                         f"{integer(ls.get('long_launch_delays') or 0)} long launch delays")
    ours = ", ".join(f"{CAUSE_WORDS[k]} {duration_ns(v)}" for k, v in analysis.by_cause_ns.items() if v)
    lines.append(f"  tracetriage, device idle: {ours or 'none'}")
    return "\n".join(lines)
