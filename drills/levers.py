"""The report's Next as a drill's lever key: which answer classes (drills/vocab.toml [lever.*]) it accepts.

    lever_key("remove_syncs", "remove_syncs", "cuda_graphs", already_pinned=False)
        -> {"next": "remove_syncs", "lever": "remove_syncs", "waste": "cuda_graphs",
            "accept": ["remove_syncs"], "partial": [], "waste_class": "cut_launches"}

A lever answer scores 1 when it names an accepted class (and not the waste's), 0.5 for a partial class (a
fix that helps less than the report's: bf16 on a chain that fusion collapses), 0 otherwise. The waste is
the report's "would waste the week" lever (NextExperiment.waste); its class is named in the feedback.
"""
from __future__ import annotations

from tracetriage.analyzers.model.verdicts import EXPERIMENT_FOR_CAUSE, Cause, Experiment
from tracetriage.analyzers.whatif.levers import LEVERS

# The vocabulary's lever class for each kind of Next (most are the kind itself).
CLASS_OF_EXPERIMENT = {e.value: e.value for e in Experiment} | {
    Experiment.BETTER_KERNELS.value: "faster_kernels",
    Experiment.FIND_THE_BOUND.value: "faster_kernels",
    Experiment.MIXED_PRECISION.value: "cheaper_arithmetic",   # lower precision on tensor cores
}
AT_ROOF = 0.85   # compute-bound ops at 85% of the peak or more: what tuning could win is under the repeats' noise of
                 # the cheaper-arithmetic step (bf16 to fp8 doubles the peak)
# Fixes that help, but less than the report's Next: half credit.
PARTIAL = {
    Experiment.FUSE.value: ("fewer_bytes",),
    Experiment.CUT_LAUNCHES.value: ("fuse",),
    Experiment.CHEAPER_ARITHMETIC.value: (),
}
# The idle cause whose name, after a removal verb ("avoid the syncs"), asserts the class.
CAUSE_OF_CLASS = {CLASS_OF_EXPERIMENT[e.value]: c for c, e in EXPERIMENT_FOR_CAUSE.items() if c is not Cause.OTHER}


def class_of_lever(name: str | None) -> str | None:
    """A registry lever's answer class: its own experiment, else its idle cause's; kernels_2x: faster kernels."""
    if name is None:
        return None
    if LEVERS[name].headroom:     # faster kernels: the replay's headroom, a class of its own
        return "faster_kernels"
    spec = LEVERS[name]
    kind = spec.experiment or EXPERIMENT_FOR_CAUSE[spec.cause]
    return CLASS_OF_EXPERIMENT[kind.value]


def lever_key(kind: str, lever: str | None, waste: str | None, already_pinned: bool,
              waste_band: tuple = (), at_roof: bool = False) -> dict:
    """The key of a lever part from the report's Next on the drill's trace (its kind, the lever it rests on and
    the waste lever: tracetriage.drills.evidence.Facts); None values are left out (a TOML key). `at_roof`: the
    compute-bound kernels already reach AT_ROOF of their peak, so tuning the same arithmetic buys nothing."""
    main = CLASS_OF_EXPERIMENT[kind]
    accept = [main]
    if kind == Experiment.OVERLAP_COPIES.value and not already_pinned:
        accept.append("pin_memory")          # pageable copies: pinning is the first half of the fix
    partial = [c for c in PARTIAL.get(kind, ()) if c not in accept]
    if kind in (Experiment.CUT_LAUNCHES.value, Experiment.FEWER_BYTES.value):
        # the report's own words: "torch.compile to fuse, then CUDA graphs"; "move fewer bytes: fuse elementwise
        # chains, ..." (the teachers give fusing the chain full marks where the Next is fewer bytes)
        accept.append(Experiment.FUSE.value)
        partial = []
    waste_class = class_of_lever(waste)
    if waste_class in accept[1:]:            # a class accepted beside the fix is the week's waste here: not accepted
        accept.remove(waste_class)
    elif waste_class in accept:              # the same class as the fix (another of its levers): no waste to name
        waste_class = None
    # the week's waste is a set: every lever predicting within a point or two of the report's waste
    classes = [waste_class] if waste_class else []
    for lv in waste_band:
        if LEVERS[lv].knob is not None:      # a one-line knob is never the week's waste (the report's own rule)
            continue
        c = class_of_lever(lv)
        if c and c not in classes and c not in accept and c not in partial:
            classes.append(c)
    if at_roof and main == Experiment.CHEAPER_ARITHMETIC.value and "faster_kernels" not in classes + accept:
        # the replay's "every kernel twice as fast" is the Next's saving only by cheaper arithmetic: kernels at their
        # compute roof cannot be tuned faster, so tuning them (autotuning, custom kernels) is the week's waste
        classes.append("faster_kernels")
    out = {"next": kind, "lever": lever, "waste": waste, "waste_class": waste_class, "accept": accept,
           "partial": partial, "waste_classes": classes or None}
    return {k: v for k, v in out.items() if v is not None}
