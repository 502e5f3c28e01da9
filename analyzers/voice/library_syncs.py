"""Syncs named by who issued them where a library's machinery did and no value is read
(tracetriage.analyzers.analyses.library_syncs, found by the triage): cuDNN's benchmark trials, a saved-tensor hook's
activation offload copies. Their fix is never "read the value once every N steps": there is no value."""
from __future__ import annotations

from tracetriage.analyzers.model.units import duration_ns, integer, size
from tracetriage.analyzers.voice.analysis import Analysis
from tracetriage.analyzers.voice.said import claim

_CUDNN, _OFFLOAD = "cudnn_benchmark", "offload_copies"    # analyses.library_syncs' kinds

# what each kind is, as the Idle line names the syncs
_WHAT = {_CUDNN: "cuDNN's benchmark trials (torch.backends.cudnn.benchmark)",
         _OFFLOAD: "the activation offload copies (a saved-tensor hook: torch.autograd.graph.save_on_cpu)"}


def _found(a: Analysis):
    return getattr(a, "library_syncs", None)


def sync_name(a: Analysis) -> str | None:
    """'the syncs of cuDNN's benchmark trials (torch.backends.cudnn.benchmark)' where a library issued most of the
    sync waiting; None where the syncs are the user's."""
    c = _found(a)
    return f"the syncs of {_WHAT[c.kind]}" if c is not None else None


def _held(c) -> str:
    return (f"{claim('next.library_syncs', c.syncs, integer(c.syncs))} of the "
            f"{claim('next.library_sync_calls', c.total, integer(c.total))} sync calls, "
            + claim("next.library_sync_share", c.share, f"{100 * c.share:.0f}%") + " of the host's time in syncs")


def library_sync_advice(a: Analysis) -> str | None:
    """The sync Next in the library's terms; None where the syncs are the user's reads (the cause's advice holds)."""
    c = _found(a)
    if c is None:
        return None
    ops = "; ".join(c.ops)
    if c.kind == _CUDNN:
        return (f"stop cuDNN's benchmark trials, whose syncs these are ({_held(c)}, "
                f"{duration_ns(c.waited_ns)}, inside {ops}): with torch.backends.cudnn.benchmark = True cuDNN times "
                "its candidate algorithms for every new input shape and waits for each timing, and no value of "
                "yours is read: give the convolutions shapes that repeat (pad or bucket the lengths to a few sizes) "
                "so that the trials run once per shape, or set torch.backends.cudnn.benchmark = False where the "
                "shapes keep changing; the replay removes only the trials' waits, not their kernels")
    return (f"stop waiting for the activation offload copies ({_held(c)}, inside {ops}: "
            f"{claim('next.offload_copies', c.copies, integer(c.copies))} device-to-host copies, "
            f"{size(c.copy_bytes)}): a saved-tensor hook (torch.autograd.graph.save_on_cpu) copies each activation "
            "autograd saves to host memory and the host waits for each copy, and no value of yours is read: keep "
            "the activations on the device (drop the save_on_cpu context where the device has room), or let the "
            "copies run without a wait; the replay removes only the waits, the copies stay")
