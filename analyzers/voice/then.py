"""The bigger change said after a knob ("then ..."): what it is, and what it adds once the knob is made.

Each lever prices its fix alone from the trace; a knob and the rewrite after it can take the same time (heldout-user16
mlp_bs2056_nw8: pinned batches -31%, "then taking host work off the critical path ... predicted −47% from this
trace", where the host work is the batch hand-over pinning already moves: the −47% was neither a separate saving nor
one to add). Where the two fixes are replayed together (whatif.predict.joint_ratio), the clause gives what the rewrite
adds after the knob, its own figure beside; and a rewrite named by its effect alone names its action.
"""
from __future__ import annotations

from tracetriage.analyzers.voice.claims import saving
from tracetriage.analyzers.whatif.levers import LEVERS

# A lever whose words say the effect, not the change: the change, said beside them
HOW = {"no_host_work": " (issue the GPU work before the Python that does not need its result, move the rest out of "
                       "the loop or into DataLoader workers)"}
ADDS_LITTLE = 0.03   # a rewrite adding under this share of the span after the knob adds little (report's LEVER_FLOOR)


def then_clause(nx) -> str:
    t = nx.then
    what = LEVERS[t.lever].words + HOW.get(t.lever, "")
    alone = saving("next.then.saving", t.saving_ns, t.baseline_ns)
    if nx.then_joint_ratio is None:
        return f"; then {what}, a bigger change to the code, predicted {alone} from this trace"
    further_ns = (nx.lever.predicted_ratio - nx.then_joint_ratio) * t.baseline_ns
    further = saving("next.then.further_saving", further_ns, t.baseline_ns)
    if further_ns < ADDS_LITTLE * t.baseline_ns:
        return (f"; then {what} adds little once the knob is made: predicted {further} more after it ({alone} on its "
                "own: the two take much of the same time)")
    return (f"; then {what}, a bigger change to the code, predicted a further {further} after the knob ({alone} on "
            "its own)")
