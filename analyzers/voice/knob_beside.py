"""The one-line knob said beside a bigger fix (NextExperiment.knob_beside): in hand first, or beside a source of
re-done work the Next names before it (voice.rework)."""
from __future__ import annotations

from tracetriage.analyzers.voice.claims import saving
from tracetriage.analyzers.voice.optimizer_advice import in_hand_change
from tracetriage.analyzers.whatif.levers import FUSED_OPTIMIZER, LEVERS


def knob_clause(k, first: bool = True) -> str:
    spec = LEVERS[k.lever]
    change = spec.knob.change_for(k.assumption) if spec.knob is not None else (
        in_hand_change(k.assumption) if k.lever == FUSED_OPTIMIZER else spec.fix)
    where = "is in hand first" if first else "beside it"
    return f"; a one-line knob {where}: {change}, predicted {saving('next.knob.saving', k.saving_ns, k.baseline_ns)}"
