"""Syncs named by who issued them where a library's machinery did and no value is read
(tracetriage.analyzers.analyses.library_syncs, found by the triage): cuDNN's benchmark trials, a saved-tensor hook's
activation offload copies. Their fix is never "read the value once every N steps": there is no value."""
from __future__ import annotations

from tracetriage.analyzers.model.units import duration_ns, integer, share, size
from tracetriage.analyzers.model.verdicts import Regime
from tracetriage.analyzers.voice.analysis import Analysis
from tracetriage.analyzers.voice.said import claim

_CUDNN, _OFFLOAD = "cudnn_trials", "offload_copies"    # analyses.library_syncs' kinds

# what each kind is, as the Idle line names the syncs
_WHAT = {_CUDNN: "cuDNN's benchmark trials (torch.backends.cudnn.benchmark)",
         _OFFLOAD: "the activation offload copies (a saved-tensor hook: torch.autograd.graph.save_on_cpu)"}


def _found(a: Analysis):
    return getattr(a, "library_syncs", None)


def cudnn_trials_sync(a: Analysis) -> bool:
    """The syncs are cuDNN's benchmark trials'."""
    c = _found(a)
    return c is not None and c.kind == _CUDNN


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


TRIALS_LEAD = 0.5       # trials holding this share of kernel time lead the Regime line: the split is of the rest
TRIALS_NAMED = 0.1      # ... and this share is said on the Time line


def _trials(a: Analysis):
    t = getattr(a, "trials", None)
    busy = getattr(a, "kernel_busy_ns", 0)
    return (t, t.kernel_ns / busy) if t is not None and busy else (None, 0.0)


def trials_time(a: Analysis) -> str:
    """'; 99% of it cuDNN's benchmark trials (...)' on the Time line, where the trials hold TRIALS_NAMED of it."""
    t, held = _trials(a)
    if t is None or held < TRIALS_NAMED:
        return ""
    return (f"; {claim('time.trials_share', held, share(held))} of it is cuDNN's benchmark trials inside the "
            f"convolutions ({integer(len(t.rows))} kernels of {integer(t.algorithms)} kinds in "
            f"{integer(t.calls)} calls), timing candidate algorithms, not computing the step")


def trials_headroom(a: Analysis) -> str:
    """What faster kernels would take where cuDNN's benchmark trials hold most of the kernel time: fewer trials, not a
    better kernel ("" where they do not)."""
    t, held = _trials(a)
    if t is None or held < TRIALS_LEAD:
        return ""
    return (f"fewer trials, not a better kernel: {share(held)} of the kernel time is cuDNN's benchmark trials, which "
            "shapes that repeat (or torch.backends.cudnn.benchmark = False) take out")


def trials_lead(a: Analysis) -> bool:
    """Whether cuDNN's benchmark trials hold most of the kernel time of a span whose verdict is read from its kernels
    (not an idle-bound one, which says what the device waits on): then the trials are the bound, not the rest."""
    t, held = _trials(a)
    return t is not None and held >= TRIALS_LEAD and a.verdict.regime is not Regime.OVERHEAD


def trials_regime(a: Analysis, line: str) -> str:
    """The Regime line with cuDNN's benchmark trials said (analyses.trial_kernels): left out of its split, and where
    they hold most of the kernel time of a span the kernels decide, the verdict: what holds the time is the knob's
    per-shape set-up, and the rest's verdict is said as the rest's (fresh9 wav2letter: 'latency-bound' over the 1%
    of kernel time left once 2.69 s of trials were out)."""
    t, held = _trials(a)
    if t is None:
        return line
    cost = ("the cost of torch.backends.cudnn.benchmark"
            + (f" with shapes that change ({integer(t.steps)} profiled steps ran trials)" if t.steps >= 2 else
               ", paid once per shape")
            + ", not of the kernels' quality")
    said = (f"{claim('regime.trials_share', held, share(held))} of kernel time "
            f"({claim('regime.trials_us', t.kernel_ns / 1e3, duration_ns(t.kernel_ns))}, each timing cuDNN's "
            f"candidate algorithms for a new input shape: {cost})")
    head = line.find(": ", len("Regime: "))
    if trials_lead(a) and head > 0:
        verdict, rest = line[len("Regime: "):head], line[head + 2:]
        rest = rest.replace("of kernel time, ", "of the rest of kernel time, ", 1)
        return f"Regime: {TRIALS_BOUND_WORDS}: they hold {said}; the rest ({share(1 - held)}) is {verdict}: {rest}"
    what = f"cuDNN's benchmark trials, left out of this split, hold {said}"
    if held >= TRIALS_LEAD and head > 0 and "of kernel time, " in line[head:]:
        rest = line[head + 2:].replace("of kernel time, ", "of the rest of kernel time, ", 1)
        return f"{line[:head + 2]}{what}; {rest}"
    return line[:-1] + f"; {what}."


TRIALS_BOUND_WORDS = "bound by cuDNN's benchmark trials"    # regime_detail.bound "cudnn_trials"
