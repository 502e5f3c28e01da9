"""The words of a serving engine's GPU-bound decode steps of a few sequences (analyses.decode_steps): the Regime line's
memory-bound decode, grounded by the workload where the replays record no shapes, and its Next (more sequences a
step, fewer weight bytes), never a re-capture for shapes the regime does not need (heldout-user17 gb10decode and
gptoss3090a/b: 'Regime: unknown ... nothing else to decide by' beside decode steps 88-99% busy)."""
from __future__ import annotations

from typing import Any

from tracetriage.analyzers.model.units import count, integer, share
from tracetriage.analyzers.voice.common import uncosted_phrase
from tracetriage.analyzers.voice.said import claim


def _steps(d: Any) -> str:
    """'each steady step's GPU is busy 88% of its wall (median over 14 steps); they run execute_new_0_cached_4 (14x),
    a decode of 4 sequences'."""
    busy = claim("regime.decode.busy_share", d.busy_share, share(d.busy_share))
    return (f"each steady step's GPU is busy {busy} of its wall (median over {count(d.steps, 'step')}), so the steps "
            f"are GPU-bound (their kernels set their length, not the host); they run {d.range_name} "
            f"({integer(d.count)}×), a decode of {claim('regime.decode.sequences', d.sequences, integer(d.sequences))} "
            f"sequence{'s' if d.sequences != 1 else ''}")


def _weights(d: Any) -> str:
    matrix = claim("regime.decode.matrix_share", d.matrix_share, share(d.matrix_share))
    rows = f"{integer(d.sequences)} row{'s' if d.sequences != 1 else ''}"
    return (f"matrix products (GEMM kernels, by name) hold {matrix} of the kernel time: at {rows} a product reads its "
            f"whole weight matrix for {integer(d.sequences)} token{'s' if d.sequences != 1 else ''}, so the weights' "
            "bytes, read once a step, set the step")


def regime_line(a: Any) -> str:
    """'Regime: memory-bound decode (weights read once a step), GPU-bound: ...; the replays ... record no shapes'."""
    d, v = a.decode, a.verdict
    return (f"Regime: memory-bound decode (its weights read once a step): {_steps(d)}; {_weights(d)}; no "
            f"rate is measured: {share(v.uncosted_share)} of kernel time (collectives aside) has no cost model, "
            f"because {uncosted_phrase(v, trace=a.trace)}.")


def next_words(a: Any) -> dict[str, str]:
    """Next of a GPU-bound decode of a few sequences: more sequences a step (each weight read serves more rows; the
    step's time grows little), or fewer weight bytes."""
    d = a.decode
    lever = (f"serve more sequences per step: raise the engine's batch (vLLM: max_num_seqs, with more concurrent "
             f"requests) above its {integer(d.sequences)}, so each weight read feeds more tokens, or read fewer weight "
             "bytes (quantize the largest weights still in 16 bit, such as an lm_head, to fp8 or 4 bit)")
    busy = claim("next.because.decode_busy_share", d.busy_share, share(d.busy_share))
    matrix = claim("next.because.decode_matrix_share", d.matrix_share, share(d.matrix_share))
    why = (f"each steady step is a decode of {integer(d.sequences)} sequence{'s' if d.sequences != 1 else ''}, its GPU "
           f"busy {busy} of its wall, and {matrix} of the kernel time is matrix products whose bytes are their "
           "weights: a step of more sequences reads the same weights, so its time per token falls")
    waste = ("CUDA graphs or launch tuning (the steps are GPU-bound), and re-capturing for shapes: the replays' "
             "bound follows from the batch")
    return {"lever": lever, "why": why, "waste": waste}


def sync_advice(a: Any) -> str | None:
    """The syncs' fix in a vLLM engine: its per-step token sync (cudaEventSynchronize on the sampled tokens) is the
    engine's, deferred a step by its async scheduling, where the user's code holds no sync to remove (heldout-user17
    gptoss3090a: 'keep values and decisions on the device, read them once every N steps'). None: no engine decode."""
    if a.decode is None:
        return None
    return ("turn on the engine's async scheduling (vLLM: async_scheduling=True, --async-scheduling): it prepares "
            "step N+1 on the host while step N runs and takes the sampled tokens a step late, in place of waiting "
            "for them each step (cudaEventSynchronize)")


def batch_beside(a: Any) -> str:
    """Beside the sync's fix: the decode's own lever, more sequences a step ("" without an engine's decode)."""
    d = a.decode
    if d is None:
        return ""
    return (f"; beside it, per token: each step decodes {integer(d.sequences)} sequence"
            f"{'s' if d.sequences != 1 else ''} and reads its weights once for them, so more sequences per step "
            "(max_num_seqs, more concurrent requests) cut the time per token further")


def headroom_needs(a: Any) -> str | None:
    """What kernels twice as fast would take in a decode whose replays record no shapes: fewer weight bytes per token,
    not a roofline measurement first (the workload grounds the bound)."""
    if a.decode is None or a.verdict.regime.value != "unknown":
        return None
    return "fewer bytes per token: the decode's weights, read once a step (more sequences a step, fewer weight bytes)"
