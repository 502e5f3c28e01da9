"""Each kernel's launch shape and occupancy, from the launch arguments Kineto records, and whether raising its
occupancy is the lever, a sideshow or active harm.

Kineto writes per launch: grid, block, registers per thread, shared memory per block (static + dynamic),
"blocks per SM" (grid blocks over the SMs), "warps per SM" (that times the warps per block) and "est. achieved
occupancy %". Its estimate comes from CUDA's occupancy calculator, called with no opt-in shared memory: every
kernel with more than 48 KiB of shared memory (cuBLAS's and cuDNN's big-tile kernels, FlashAttention) gets 0%.
So the occupancy here is computed again from the device's limits per SM (deviceProperties), as the calculator
does (resident blocks per SM = the smallest of the thread, block, register and shared-memory limits), and
Kineto's figure kept beside it as a check: where Kineto's calculator succeeds the two agree to its rounding, except
for a block that is not whole warps, whose threads Kineto counts where occupancy counts its warps' slots.

    shapes = launch_shapes(read_launch_args(path))
    shapes[0].theoretical_pct, shapes[0].limiter, shapes[0].achieved_pct

Input: tracetriage.analyzers.model.launch_args.LaunchArgs. Output: LaunchShape per distinct (kernel, launch
shape), most device time first; `verdict()` for one kernel given the roofs it reaches.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model.launch_args import DeviceLimits, LaunchArgs

# Resident blocks per SM by compute capability (CUDA C Programming Guide, "Compute Capabilities" table,
# "Maximum number of resident blocks per SM"); a capability not listed takes 32, the figure since Volta.
MAX_BLOCKS_PER_SM = {(6, 0): 32, (6, 1): 32, (7, 0): 32, (7, 2): 32, (7, 5): 16, (8, 0): 32, (8, 6): 16, (8, 7): 16,
                     (8, 9): 24, (9, 0): 32, (10, 0): 32, (12, 0): 32}
REG_ALLOCATION_UNIT = 256       # registers are given to a warp in blocks of 256 (CUDA occupancy calculator)
SUB_PARTITIONS = 4              # an SM's register file is split between 4 warp schedulers (sm_60 and later)
SHARED_ALLOCATION_UNIT = 128    # bytes of shared memory are given to a block in 128-byte steps (sm_80 and later)
SHARED_RESERVED_PER_BLOCK = 1024   # the system reserves 1 KiB of shared memory per resident block (sm_80 and later)


@dataclass(frozen=True)
class LaunchShape:
    """One kernel launched with one shape: what the hardware can hold of it per SM and what the grid gives it."""
    kernel: str
    device: int
    launches: int
    median_us: float
    total_us: float
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    blocks: int                  # grid blocks per launch
    threads_per_block: int
    warps_per_block: int
    regs: int                    # registers per thread
    shared: int                  # bytes of shared memory per block
    blocks_per_sm: float         # grid blocks per SM: what the launch offers each SM
    resident_blocks: int         # the most blocks of it one SM can hold at once
    limiter: str                 # what caps resident_blocks: threads | blocks | registers | shared memory
    theoretical_pct: float       # resident_blocks x warps per block over the SM's warps, %
    achieved_pct: float          # the same with the grid's blocks per SM where they are fewer, % (Kineto's "est.")
    kineto_pct: float | None     # Kineto's own estimate (None: not recorded); 0 where its calculator failed

    @property
    def grid_limited(self) -> bool:
        """The grid offers each SM fewer blocks than it could hold: the launch, not the kernel, sets occupancy."""
        return self.blocks_per_sm < self.resident_blocks


def launch_shapes(args: LaunchArgs) -> tuple[LaunchShape, ...]:
    """Every distinct (kernel, grid, block, registers, shared memory) with its occupancy, most device time first.
    Kernels without launch arguments (a CPU trace, a ROCm trace, an old Kineto) give none."""
    k = args.kernels
    ok = (k.grid[:, 0] > 0) & (k.block[:, 0] > 0) & (k.regs >= 0) if len(k) else np.zeros(0, bool)
    rows = np.flatnonzero(ok)
    if not len(rows):
        return ()
    names = np.array(k.name, dtype=object)[rows]
    threads = k.block[rows].prod(axis=1)
    resident, limiter, warps, max_warps = _resident(args, k.device[rows], threads, k.regs[rows], k.shared[rows])
    blocks = k.grid[rows].prod(axis=1)
    sms = np.array([_limits(args, d).sms for d in k.device[rows]], dtype=np.float64)
    per_sm = blocks / np.maximum(sms, 1)
    out = []
    keys = list(zip(names, map(tuple, k.grid[rows]), map(tuple, k.block[rows]), k.regs[rows], k.shared[rows],
                    k.device[rows]))
    groups: dict = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    for key, idx in groups.items():
        i = idx[0]
        durs = k.dur[rows[idx]] / 1e3
        theo = 100.0 * resident[i] * warps[i] / max_warps[i] if max_warps[i] else 0.0
        ach = 100.0 * min(float(resident[i]), float(per_sm[i])) * warps[i] / max_warps[i] if max_warps[i] else 0.0
        kin = float(k.est_occupancy[rows[i]])
        out.append(LaunchShape(kernel=str(key[0]), device=int(key[5]), launches=len(idx),
                               median_us=float(np.median(durs)), total_us=float(durs.sum()),
                               grid=tuple(int(x) for x in key[1]), block=tuple(int(x) for x in key[2]),  # type: ignore[arg-type]
                               blocks=int(blocks[i]), threads_per_block=int(threads[i]), warps_per_block=int(warps[i]),
                               regs=int(key[3]), shared=int(max(key[4], 0)), blocks_per_sm=float(per_sm[i]),
                               resident_blocks=int(resident[i]), limiter=str(limiter[i]),
                               theoretical_pct=theo, achieved_pct=ach, kineto_pct=None if np.isnan(kin) else kin))
    return tuple(sorted(out, key=lambda s: -s.total_us))


def _limits(args: LaunchArgs, device: int) -> DeviceLimits:
    d = args.device(int(device))
    return d if d is not None else _UNKNOWN


# A trace without deviceProperties: an H100/H200-like SM, so that a shape is still read (never printed as measured)
_UNKNOWN = DeviceLimits(id=-1, name="", sms=132, max_threads_per_sm=2048, regs_per_sm=65536, shared_per_sm=233472,
                        regs_per_block=65536, max_threads_per_block=1024, warp_size=32, major=9, minor=0)


def _resident(args: LaunchArgs, devices: np.ndarray, threads: np.ndarray, regs: np.ndarray, shared: np.ndarray):
    """Resident blocks per SM and what caps them, per launch, as CUDA's occupancy calculator computes them:
    1. threads: the SM's warps over the block's warps;
    2. blocks: the architecture's resident-block limit;
    3. registers: each warp takes regs x 32 rounded up to 256; each of the 4 sub-partitions holds its quarter of
       the register file's worth of warps;
    4. shared memory: each block takes its bytes plus 1 KiB reserved, in 128-byte steps, out of the SM's.
    """
    lim = [_limits(args, d) for d in devices]
    warp = np.array([d.warp_size for d in lim])
    max_warps = np.array([d.max_threads_per_sm // d.warp_size for d in lim])
    warps = -(-threads // warp)
    by_threads = max_warps // np.maximum(warps, 1)
    by_blocks = np.array([MAX_BLOCKS_PER_SM.get((d.major, d.minor), 32) for d in lim])
    regs_per_warp = -(-(regs * warp) // REG_ALLOCATION_UNIT) * REG_ALLOCATION_UNIT
    regs_per_sm = np.array([d.regs_per_sm for d in lim])
    warps_by_regs = np.where(regs_per_warp > 0, (regs_per_sm // SUB_PARTITIONS) // np.maximum(regs_per_warp, 1)
                             * SUB_PARTITIONS, max_warps)
    by_regs = warps_by_regs // np.maximum(warps, 1)
    need = np.where(shared > 0, -(-(np.maximum(shared, 0) + SHARED_RESERVED_PER_BLOCK) // SHARED_ALLOCATION_UNIT)
                    * SHARED_ALLOCATION_UNIT, 0)
    shared_per_sm = np.array([d.shared_per_sm for d in lim])
    by_shared = np.where(need > 0, shared_per_sm // np.maximum(need, 1), by_blocks)
    table = np.stack([by_threads, by_blocks, by_regs, by_shared])
    which = np.argmin(table, axis=0)
    names = np.array(["threads", "blocks", "registers", "shared memory"])
    return table.min(axis=0), names[which], warps, max_warps


# --- is occupancy the lever? --------------------------------------------------------------------------------

class Occupancy(enum.Enum):
    LEVER = "lever"          # far below both roofs, few warps resident: more warps in flight would help
    SIDESHOW = "sideshow"    # at the memory roof already (or far below it for another reason): more warps buy nothing
    HARM = "harm"            # at the compute roof with big tiles: more resident blocks means smaller tiles, less reuse


NEAR_ROOF = 0.6     # of the nearer roof's peak: a kernel past it has less left to gain than occupancy could buy; a
                    # streaming kernel on an H200 reaches ~0.8 of the datasheet's bandwidth (4.25 of 4.8 TB/s: the
                    # measured copy ceiling), a large bf16 GEMM ~0.8 of its FLOP/s (807 of 989.5 TFLOP/s)
LOW_OCCUPANCY = 25.0   # % of the SM's warps: below a quarter, latency is hidden only by each thread's own
                       # independent loads (ILP), never by other warps
TILE_LIMITERS = ("registers", "shared memory")   # a block's footprint caps it: raising occupancy means shrinking it


@dataclass(frozen=True)
class OccupancyVerdict:
    verdict: Occupancy
    roof: str                  # "memory" | "compute": the nearer roof
    roof_share: float          # of that roof's peak
    occupancy_pct: float       # the kernel's achieved occupancy (launch shape and limits)
    limiter: str


def verdict(shape: LaunchShape, gbps: float | None, tflops: float | None, peak_gbps: float,
            peak_tflops: float | None) -> OccupancyVerdict:
    """Whether raising this kernel's occupancy is the lever, a sideshow or active harm, in three steps:
    1. at a roof (NEAR_ROOF of its peak): a memory roof is a sideshow (bytes, not warps, are what is left); a compute
       roof reached by a kernel whose blocks are capped by registers or shared memory is harm (more blocks per SM
       only by smaller tiles: less reuse, more bytes per FLOP); a compute roof otherwise is a sideshow;
    2. far below both roofs at low occupancy (under LOW_OCCUPANCY): the lever (too few warps in flight to hide
       memory latency);
    3. far below both roofs at high occupancy: a sideshow (the warps are there; something else holds the kernel).
    """
    mem = (gbps or 0.0) / peak_gbps if peak_gbps else 0.0
    cmp = (tflops or 0.0) / peak_tflops if peak_tflops else 0.0
    roof, share = ("compute", cmp) if cmp > mem else ("memory", mem)
    occ = shape.achieved_pct
    if share >= NEAR_ROOF:
        harm = roof == "compute" and shape.limiter in TILE_LIMITERS and not shape.grid_limited
        v = Occupancy.HARM if harm else Occupancy.SIDESHOW
    elif occ < LOW_OCCUPANCY:
        v = Occupancy.LEVER
    else:
        v = Occupancy.SIDESHOW
    return OccupancyVerdict(v, roof, share, occ, shape.limiter)
