"""tensors_on_device: tensors made where they are used (torch.randn(..., device="cuda")), not made on the host
and copied (torch.randn(...).to("cuda")).

The trace shows it as a host-to-device copy whose source a factory op made on the host just before:
`aten::randn`/`zeros`/`ones`/`full`/`arange`/... among the outermost ops just before the copy's, with only
views and other copies between them. In the graph:
  1. the factory ops' host time goes, but for one op dispatch each (the device factory still launches);
  2. the copy becomes the factory's kernel: its bytes written at this trace's memory-bound rate (else
     the datasheet bandwidth), and its call no longer waits for a pageable copy to drain.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import CPU_OP, MEMCPY, NONE, thread_keys
from tracetriage.analyzers.model.verdicts import Cause, Experiment
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif.levers.knob import ops_named, peaks_of
from tracetriage.analyzers.whatif.levers.spec import (
    Assumption,
    Context,
    Knob,
    LeverSpec,
    Measured,
    Options,
    Recognise,
    went,
)

# Ops that make a tensor's values from nothing but its shape (aten::empty is filled from data next; torch.tensor's
# lift_fresh copies the user's data): the same call with device= makes them on the GPU.
FACTORIES = ("aten::randn", "aten::rand", "aten::randint", "aten::randperm", "aten::normal", "aten::zeros",
             "aten::ones", "aten::full", "aten::arange", "aten::eye", "aten::linspace", "aten::tril", "aten::triu")
# Between a factory and the copy of its tensor: views, and the other copies of a batch of such tensors.
PASS_THROUGH = ("aten::unsqueeze", "aten::expand", "aten::view", "aten::reshape", "aten::t", "aten::transpose",
                "aten::to", "aten::_to_copy", "aten::copy_", "aten::permute", "aten::squeeze", "aten::slice",
                "aten::select", "aten::flatten", "aten::alias", "aten::detach", "aten::lift_fresh", "aten::as_strided")
# Where neither this trace's memory-bound kernels nor a peak table entry give the device's write rate: 1 TB/s, the
# order of any GPU of the last generations (an RTX 3080's sheet says 760 GB/s, an H100's 3.35 TB/s); said as
# assumed wherever it is used (RATE_WORDS).
ASSUMED_BYTES_PER_NS = 1000.0
RATE_WORDS = {"trace": "this trace's memory rate", "sheet": "the device's datasheet bandwidth",
              "assumed": "an assumed 1 TB/s (no memory-bound kernel measured, no peak table entry)"}
LOOK_BACK = 8         # outermost ops to look back over from a copy for the factory that made its tensor


def is_factory(name: str) -> bool:
    return name.startswith(FACTORIES) and "_like" not in name


@dataclass(frozen=True)
class OnDevice(Assumption):
    host_ns: int = 0                 # the factory ops' host time before the copies
    nbytes: int = 0
    factories: tuple[str, ...] = ()  # the factory ops' names, the longest first (aten::randn)
    copy_ns: int = 0                 # the copies' own time on the device, before
    rate: str = "trace"              # where the device factory's write rate comes from: "trace" (this trace's
                                     # memory-bound kernels), "sheet" (the device's datasheet), "assumed" (neither)


def _waiting_across(g, fs: int, fe: int, mine: np.ndarray, call: int) -> list[int]:
    """The calls whose host gap holds the factory's time [fs, fe]: the next call of its own thread, and the next
    call of any other thread idle across it (autograd's backward thread waits on the main thread's step)."""
    first = mine[np.searchsorted(g.c_start[mine], fe)] if g.c_start[mine][-1] >= fe else call
    later = np.flatnonzero((g.c_start >= fe) & (g.c_start - g.c_gap <= fs) & (g.c_wake == NONE))
    if len(later):
        thread = g.c_thread[later]
        _, first_of = np.unique(thread, return_index=True)   # c_* run in start order: each thread's first
        later = later[first_of]
    return sorted({int(first), *later.tolist()})


def top_level_ops(c: Context) -> tuple[np.ndarray, np.ndarray]:
    """The host's outermost cpu_ops (not inside another op of their thread), in start order, and their threads."""
    ev = c.trace.ev
    ops = np.flatnonzero(ev.cat == CPU_OP)
    key = thread_keys(ev, ops)
    top = np.zeros(len(ops), bool)
    for k in distinct(key).tolist():
        m = np.flatnonzero(key == k)                  # rows are sorted by (start, -end)
        reach = np.maximum.accumulate(ev.end[ops[m]])
        top[m] = np.concatenate(([True], ev.start[ops[m]][1:] >= reach[:-1]))
    return ops[top], key[top]


def _made_for(c: Context, copy_op: int, tops: np.ndarray, keys: np.ndarray, nbytes: int) -> list[int]:
    """The factory ops whose tensors the copy (and the copies beside it) move: walking back from the copy's
    outermost op on its thread, past views and other copies, the factories met before any op that computes (a
    tensor made long before, or from data, is no factory's). A factory counts only where its recorded size
    makes this copy's bytes exactly (numel x 1, 2, 4 or 8 bytes): a `torch.zeros` made for something else beside
    a DataLoader batch's copy is not what the copy moves (kineto's num_workers_4 ResNet trace was told to make
    its batches with torch.randn on the device). Where the profiler recorded no arguments of the factory
    (record_shapes=False) its size is unknown, and a factory that launched nothing counts unchecked: a public RTX
    3080 trace's `torch.randn(10000, 10000).cuda()`, 654 ms of host RNG a step, was otherwise told to profile
    the host. A factory that launched a kernel made its tensor on the device and is passed over: a diffusion step's
    `torch.randint(..., device=device)` beside the host `torch.randn(shape).to(device)` was named as host-made."""
    ev, tr = c.trace.ev, c.trace
    k = thread_keys(ev, copy_op)
    mine = tops[keys == k]
    j = int(np.searchsorted(ev.start[mine], ev.start[copy_op], side="right")) - 1
    found, sized, unsized = [], False, False
    for row in mine[max(j - LOOK_BACK, 0):j][::-1].tolist():
        name = tr.name_of(row)
        if is_factory(name) and launches_inside(c, row):
            continue      # made on the device already (torch.randint(..., device=device) launches its kernel)
        if is_factory(name):
            found.append(row)
            n = factory_numel(tr, row)
            sized = sized or (n is not None and n > 0 and nbytes in (n, 2 * n, 4 * n, 8 * n))
            # no arguments recorded (record_shapes off): the size cannot be checked, and a factory that launched
            # nothing, right before the copy with only views between, made what it moves
            unsized = unsized or (_no_arguments(tr, row) and not launches_inside(c, row))
        elif not name.startswith(PASS_THROUGH):
            break
    return found if sized or unsized else []


def _no_arguments(tr, row: int) -> bool:
    """The profiler recorded none of this op's arguments (record_shapes=False): no dims, no concrete inputs."""
    dims, _, concrete = tr.shapes(row)
    return not dims and not concrete


def launches_inside(c: Context, row: int) -> bool:
    """A launch call of this op's thread runs inside it: the factory made its tensor on the device already."""
    g, ev = c.g, c.trace.ev
    if not g.n_calls:
        return False
    k = thread_keys(ev, row)
    inside = (g.c_start >= ev.start[row]) & (g.c_start < ev.end[row]) & (g.c_kind == dg.LAUNCH_CALL)
    return bool((inside & (c.call_keys == k)).any())


def factory_numel(tr, row: int) -> int | None:
    """How many elements a factory op made, from what the profiler recorded of its arguments (record_shapes, torch
    2.1+ "Concrete Inputs"): the size list of randn/zeros/ones/full/randint, arange's (start, end, step), eye's n
    (and m), randperm's n, tril/triu's input; None where the trace does not say."""
    dims, types, concrete = tr.shapes(row)
    name = tr.name_of(row)
    if name.startswith(("aten::tril", "aten::triu")) and dims and dims[0]:
        return int(np.prod(dims[0]))
    if not concrete or not types:
        return None
    for t, v in zip(types, concrete):
        if t == "ScalarList" and isinstance(v, str) and v.startswith("["):
            try:
                return int(np.prod([int(x) for x in v.strip("[]").split(",") if x.strip()]))
            except ValueError:
                return None
    nums = []
    for t, v in zip(types, concrete):
        if t == "Scalar" and isinstance(v, str) and v not in ("", "False", "True"):
            try:
                nums.append(float(v))
            except ValueError:
                pass
    if name.startswith("aten::arange") and nums:
        start, end, step = (0.0, nums[0], 1.0) if len(nums) == 1 else (nums[0], nums[1], nums[2] if len(nums) > 2
                                                                        else 1.0)
        return max(int(np.ceil((end - start) / step)), 0) if step else None
    if name.startswith("aten::eye") and nums:
        return int(nums[0] * (nums[1] if len(nums) > 1 else nums[0]))
    if name.startswith("aten::randperm") and nums:
        return int(nums[0])
    return None


def apply(c: Context, p, o: Options) -> tuple[OnDevice, dict]:
    g, ev = c.g, c.trace.ev
    h2d = np.flatnonzero((g.g_cat == MEMCPY) & c.gpu_named(lambda n: "HtoD" in n) & g.g_linked)
    if not len(h2d) or not len(ops_named(c, is_factory)):
        return OnDevice("tensors_on_device", 0), {"copies": 0}
    tops, keys = top_level_ops(c)
    launches = np.flatnonzero((g.c_kind == dg.LAUNCH_CALL) & g.c_issues)
    op_cost = int(np.median((g.c_gap - g.c_host + g.c_dur)[launches])) if len(launches) else g.launch_cost_ns
    peaks = peaks_of(c)
    rate = c.memory_rate or (peaks.bytes_per_s / 1e9 if peaks is not None else ASSUMED_BYTES_PER_NS)
    rate_from = "trace" if c.memory_rate else "sheet" if peaks is not None else "assumed"
    names: dict[str, int] = {}
    copy_ns = 0
    c_key = c.call_keys
    used: set[int] = set()
    hit, host_ns, nbytes = 0, 0, 0
    for row in h2d.tolist():
        call = int(g.g_call[row])
        op = int(c.trace.op_of[g.c_row[call]])
        if op == NONE:
            continue
        made = _made_for(c, op, tops, keys, int(g.g_nbytes[row]))
        if not made:
            continue
        mine = np.flatnonzero(c_key == c_key[call])     # the thread's calls, in start order
        for f in (f for f in made if f not in used):     # a batch of copies shares its factories' time once
            used.add(f)
            fs, fe = int(ev.start[f]), int(ev.end[f])
            took = max(fe - fs - op_cost, 0)
            for nxt in _waiting_across(g, fs, fe, mine, call):
                p.c_gap[nxt] = max(int(p.c_gap[nxt]) - took, 0)
                if g.c_wake[nxt] != NONE:     # a call woken by another thread's: its wait after the waker too
                    p.c_wdelay[nxt] = max(int(p.c_wdelay[nxt]) - took, 0)
            host_ns += took
            names[c.trace.name_of(f)] = names.get(c.trace.name_of(f), 0) + took
        copy_ns += int(g.g_dur[row])
        p.c_blocked[call] = False
        p.c_dur[call] = p.c_min[call]
        p.g_dur[row] = max(int(np.ceil(max(int(g.g_nbytes[row]), 0) / rate)), 1_000)
        hit += 1
        nbytes += max(int(g.g_nbytes[row]), 0)
    if hit:   # the stream syncs after the pageable copies return at once too
        ext = c.trace.ev.ext[g.c_row]
        calls = g.g_call[h2d]
        s = (g.c_kind == dg.SYNC_CALL) & np.isin(ext, list(set(ext[calls].tolist())))
        p.c_blocked[s] = False
        p.c_dur[s] = p.c_min[s]
    made = tuple(sorted(names, key=lambda n: -names[n]))
    return (OnDevice("tensors_on_device", hit, host_ns=host_ns, nbytes=nbytes, factories=made, copy_ns=copy_ns,
                     rate=rate_from), {"copies": hit})


def says(a: OnDevice) -> str:
    if a.count == 0:
        return "no host-to-device copy of a tensor a factory op made on the host just before"
    made = f" by {', '.join(a.factories[:2])}" if a.factories else ""
    return (f"{units.integer(a.count)} tensors made on the host{made} and copied ({units.size(a.nbytes)}, "
            f"{units.duration_ns(a.copy_ns)} of copies) are made on the device: {units.duration_ns(a.host_ns)} of "
            f"host work{made} goes, each copy becomes a kernel writing its bytes at {RATE_WORDS[a.rate]}")


def _host_and_copies(m: Measured) -> float:
    """What the knob acts on: the idle of host work (the factories) and of the copies."""
    return float(m.by_cause_ns.get(Cause.HOST_WORK, 0) + m.by_cause_ns.get(Cause.DATA_TRANSFER, 0))


def copies(m: Measured) -> int:
    return m.whatif.lever("tensors_on_device").detail.get("copies", 0)


SPEC = LeverSpec(
    name="tensors_on_device", effort=1, cause=None, apply=apply, says=says, words="making tensors on the device",
    fix="torch.randn(..., device=device) in place of torch.randn(...).to(device)",
    recognise=Recognise(order=2, evidence="factory_copies", because="its host-made tensors' copies went",
                        amount=copies, acted=_host_and_copies, applied=went),
    applied_words="tensors made on the device", weighed_only_if_found=True, experiment=Experiment.TURN_KNOB,
    knob=Knob(change="torch.randn(..., device=\"cuda\") (torch.zeros/ones/full/arange/tensor likewise) in place of "
                     "making the tensor on the host and calling .to(\"cuda\")",
              evidence="a host-to-device memcpy whose source a factory op (aten::randn/zeros/ones/full/arange/tril/"
                       "triu/...) with no GPU work made on the same thread just before the copy",
              applies="every GPU and dtype: any tensor made on the host only to be copied",
              model="the factory ops' host time goes but one dispatch each; the copy becomes a kernel writing its "
                    "bytes at this trace's memory-bound rate; the call and its stream sync stop waiting",
              guide="Performance Tuning Guide: create tensors directly on the target device",
              where=Cause.HOST_WORK))
