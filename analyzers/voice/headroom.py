"""What kernels twice as fast would take, by the regime that bounds them: the words beside the Next's headroom (moved
out of voice.report)."""
from __future__ import annotations

from tracetriage.analyzers.model.verdicts import Regime
from tracetriage.analyzers.voice import decode as decode_words
from tracetriage.analyzers.voice import library_syncs as lib_syncs
from tracetriage.analyzers.voice.analysis import Analysis
from tracetriage.analyzers.voice.common import attends, cheaper_arithmetic, matrix_precision, replayed_from_graphs

HEADROOM_NEEDS = {"compute": "cheaper arithmetic (lower precision on tensor cores) or less of it",
                  "memory": "fewer bytes: fusion, lower precision, no materialised copies",
                  "overhead": "fewer, larger kernels", "unknown": "knowing the bound first (ncu --set roofline)"}


def headroom_needs(a: Analysis) -> str:
    """What kernels twice as fast would take here: for compute-bound ones, the precisions this device has; for an
    engine's decode whose replays record no shapes, fewer weight bytes (voice.decode), not a roofline first."""
    if lib_syncs.trials_headroom(a):   # (most kernel time is cuDNN's benchmark trials: fewer, not better kernels)
        return lib_syncs.trials_headroom(a)
    if a.verdict.regime is Regime.COMPUTE:
        return cheaper_arithmetic(a.roof.peaks, a.verdict.dtype, headroom=True, attention=attends(a),
                                  named=matrix_precision(a), replayed=replayed_from_graphs(a))
    return decode_words.headroom_needs(a) or HEADROOM_NEEDS.get(a.verdict.regime.value, "a better kernel")
