"""The Next where the regime is unknown: most kernel time has no cost model, so the experiment finds the bound
(or, where graph replays hide what runs between their kernels, times them first)."""
from __future__ import annotations

from tracetriage.analyzers.model.units import share
from tracetriage.analyzers.voice.common import uncosted_phrase
from tracetriage.analyzers.voice.graphs import replay_next
from tracetriage.analyzers.voice.said import claim


def find_the_bound(v, replays=None, trace=None) -> dict[str, str]:
    """Next, when the regime is unknown: nothing rests on a bound that was not measured. `replays`: graph replays
    whose stamps the profiler laid end to end (analyses.replay_clock), where the host's clock shows time between
    their kernels: the check that time calls for comes first (a re-capture to cost the kernels would not show it)."""
    top = next(iter(v.uncosted_why_us), "no_cost_model")
    lever = {
        "no_shapes": "capture again with record_shapes=True so each kernel's op carries its shapes, then triage again",
        "no_launching_op": "capture one eager step (no CUDA graphs) with ProfilerActivity.CPU and record_shapes=True "
                           "so each kernel links to the op that launched it",
        "launched_outside_ops": "measure the top kernels' FLOP/s and bytes with Nsight Compute (ncu --set roofline), "
                                "or count the work the extension does by hand (a matmul of n^3 multiply-adds): no op "
                                "in the trace carries their sizes",
        "graph_replay": "capture one eager step (no CUDA graphs) with record_shapes=True: its kernels carry the ops "
                        "and shapes the replays hide",
        "no_cost_model": "measure the top kernels' FLOP/s and bytes with Nsight Compute (ncu --set roofline) to "
                         "find which ceiling they are under",
        "above_peak": "measure the top kernels' FLOP/s and bytes with Nsight Compute (ncu --set roofline): their "
                      "ops' shapes would put them above the device's peak, so the trace cannot say what they cost",
    }[top]
    uncosted = claim("next.because.uncosted_share", v.uncosted_share, share(v.uncosted_share))
    why = f"{uncosted} of the kernel time has no cost model: {uncosted_phrase(v, 'next.because.uncosted_why', trace)}"
    waste = "choosing between fewer bytes and cheaper arithmetic now: the trace does not say which limits the kernels"
    if top == "graph_replay" and replays is not None and replays.unseen_ns > 0:
        return replay_next(replays, why, waste)
    return {"lever": lever, "why": why, "waste": waste}
