"""The analysis's verdicts as string enums: their values are what `--json` prints.

Arrays of codes (a gap's cause, a kernel's bound) index the tuples CAUSES and BOUNDS,
so a code and its enum never disagree.
"""
from __future__ import annotations

from enum import Enum


class Cause(str, Enum):
    """Why the GPU sat idle (the taxonomy in docs/design.md)."""
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
    COMMUNICATION = "communication"   # collectives that no compute overlaps hold most of the busy time
    UNKNOWN = "unknown"      # most kernel time has no cost model
    LATENCY = "latency"      # most kernel time is in kernels far below both roofs

    def __str__(self) -> str:
        return self.value


class Bound(str, Enum):
    """What one kernel or op waits on, from its place on the roofline (or its name)."""
    UNKNOWN = "unknown"
    COMPUTE = "compute"
    MEMORY = "memory"
    COMMUNICATION = "communication"   # collectives wait on peers, not on this device
    LATENCY = "latency"               # far below both roofs: occupancy, tiny grids, the library's algorithm

    def __str__(self) -> str:
        return self.value


class Construct(str, Enum):
    """Whose code made a gap, a host stretch or a launch: the framework construct around it (the cause
    says what kind of wait; the construct says where in the user's program)."""
    SETUP = "setup"                      # one-time set-up: first calls, context/handle creation, lazy loading
    COMPILE = "compile"                  # torch.compile compiling (dynamo tracing, Inductor codegen, autotuning)
    ALLOCATOR = "allocator"              # the caching allocator's cudaMalloc / cudaFree (empty_cache, growth)
    DATALOADER = "dataloader"            # a DataLoader iterator's __next__
    OPTIMIZER = "optimizer"              # Optimizer.step and zero_grad
    COLLECTIVE = "collective"            # c10d / NCCL collectives
    BACKWARD = "backward"                # the autograd engine running backward functions
    COMPILED = "compiled"                # code torch.compile made, running (guards, the compiled graph's launches)
    MODULE = "module"                    # an nn.Module's forward (recorded with with_modules=True)
    USER = "user"                        # none of these: the user's own code

    def __str__(self) -> str:
        return self.value


CAUSES: tuple[Cause, ...] = tuple(Cause)     # gap cause code i is CAUSES[i]
BOUNDS: tuple[Bound, ...] = tuple(Bound)     # kernel bound code i is BOUNDS[i]
CONSTRUCTS: tuple[Construct, ...] = tuple(Construct)   # a construct code i is CONSTRUCTS[i]; earlier ones win
                                                       # where they nest (compile inside a forward is compile)


class Experiment(str, Enum):
    """The kind of the report's next experiment (voice says it; the cause or regime it rests on beside it)."""
    WARM_UP = "warm_up"                        # one-time set-up dominates the profile
    PROFILE_REPLAYS = "profile_replays"        # ... as a CUDA-graph capture: profile the replays instead
    CUT_LAUNCHES = "cut_launches"              # launch_overhead
    MOVE_HOST_WORK = "move_host_work"          # host_work
    REMOVE_SYNCS = "remove_syncs"              # synchronization
    OVERLAP_COPIES = "overlap_copies"          # data_transfer
    RECAPTURE = "recapture"                    # other: the cause was not recorded
    CHEAPER_ARITHMETIC = "cheaper_arithmetic"  # compute-bound
    FEWER_BYTES = "fewer_bytes"                # memory-bound
    FIND_THE_BOUND = "find_the_bound"          # regime unknown: most kernel time has no cost model
    MIXED_PRECISION = "mixed_precision"        # ... but most of it is fp32 GEMM/convolution on CUDA cores, by name
    BETTER_KERNELS = "better_kernels"          # latency-bound: the algorithm choice, more work per launch
    CAPTURE_ON_GPU = "capture_on_gpu"          # a CPU-only trace
    MOVE_TO_GPU = "move_to_gpu"                # a GPU machine's trace whose model and inputs stayed on the CPU
    FUSE_OPTIMIZER = "fuse_optimizer"          # per-parameter optimizer kernels: foreach / fused
    FUSE = "fuse"                              # an eager elementwise chain: one kernel (torch.compile)
    COMPILE_ONCE = "compile_once"              # torch.compile recompiles: dynamic shapes, bucketing
    OVERLAP_COMM = "overlap_comm"              # communication-bound, mostly moving bytes
    FIND_STRAGGLER = "find_straggler"          # communication-bound, mostly waiting for a peer
    TURN_KNOB = "turn_knob"                    # a one-line change from PyTorch's tuning guides the trace shows applies

    def __str__(self) -> str:
        return self.value


EXPERIMENT_FOR_CAUSE = {Cause.LAUNCH_OVERHEAD: Experiment.CUT_LAUNCHES, Cause.HOST_WORK: Experiment.MOVE_HOST_WORK,
                        Cause.SYNCHRONIZATION: Experiment.REMOVE_SYNCS, Cause.DATA_TRANSFER: Experiment.OVERLAP_COPIES,
                        Cause.OTHER: Experiment.RECAPTURE}

# A span whose device idles more than this share of it is overhead-bound (analyses.roofline's verdict); below it the
# Regime line may still say the host paces the kernels (voice.host_paced), the two reading the one bound.
OVERHEAD_IDLE_SHARE = 0.5

# Steady steps (after a cold start) idling this share of each (the median step's idle over its wall): their gaps recur,
# a regime the Regime line says (voice/cold_start.py) and a week's waste no "its biggest gaps do not recur" dismisses
# (heldout-user17 r18compile: steady steps 35% idle, mostly launch overhead, beside that waste line).
LOOP_IDLES_TOO = 0.25
