"""The analysis's verdicts as string enums: their values are what `--json` prints.

Arrays of codes (a gap's cause, a kernel's bound) index the tuples CAUSES and BOUNDS,
so a code and its enum never disagree.
"""
from __future__ import annotations

from enum import Enum


class Cause(str, Enum):
    """Why the GPU sat idle (DESIGN.md's taxonomy)."""
    LAUNCH_OVERHEAD = "launch_overhead"
    HOST_WORK = "host_work"
    SYNCHRONIZATION = "synchronization"
    DATA_TRANSFER = "data_transfer"
    OTHER = "other"

    def __str__(self) -> str:
        return self.value


class Regime(str, Enum):
    """What a span waits on."""
    COMPUTE = "compute"
    MEMORY = "memory"
    OVERHEAD = "overhead"
    UNKNOWN = "unknown"      # most kernel time has no cost model

    def __str__(self) -> str:
        return self.value


class Bound(str, Enum):
    """What one kernel or op waits on, from its place on the roofline (or its name)."""
    UNKNOWN = "unknown"
    COMPUTE = "compute"
    MEMORY = "memory"
    COMMUNICATION = "communication"   # collectives wait on peers, not on this device

    def __str__(self) -> str:
        return self.value


CAUSES: tuple[Cause, ...] = tuple(Cause)     # gap cause code i is CAUSES[i]
BOUNDS: tuple[Bound, ...] = tuple(Bound)     # kernel bound code i is BOUNDS[i]


class Experiment(str, Enum):
    """The kind of the report's next experiment (voice says it; the cause or regime it rests on beside it)."""
    WARM_UP = "warm_up"                        # one-time set-up dominates the profile
    CUT_LAUNCHES = "cut_launches"              # launch_overhead
    MOVE_HOST_WORK = "move_host_work"          # host_work
    REMOVE_SYNCS = "remove_syncs"              # synchronization
    OVERLAP_COPIES = "overlap_copies"          # data_transfer
    RECAPTURE = "recapture"                    # other: the cause was not recorded
    CHEAPER_ARITHMETIC = "cheaper_arithmetic"  # compute-bound
    FEWER_BYTES = "fewer_bytes"                # memory-bound
    FIND_THE_BOUND = "find_the_bound"          # regime unknown: most kernel time has no cost model
    CAPTURE_ON_GPU = "capture_on_gpu"          # a CPU-only trace

    def __str__(self) -> str:
        return self.value


EXPERIMENT_FOR_CAUSE = {Cause.LAUNCH_OVERHEAD: Experiment.CUT_LAUNCHES, Cause.HOST_WORK: Experiment.MOVE_HOST_WORK,
                        Cause.SYNCHRONIZATION: Experiment.REMOVE_SYNCS, Cause.DATA_TRANSFER: Experiment.OVERLAP_COPIES,
                        Cause.OTHER: Experiment.RECAPTURE}
