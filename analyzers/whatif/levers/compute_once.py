"""compute_once: a stretch of work that runs again and again inside one step on inputs of the same shapes while the
work around it changes, computed once and reused (an encoder run once before a decode loop and its output passed in:
Hugging Face's model(encoder_outputs=enc, ...) in place of model(input_features=feats, ...) each token).

What any trace of it shows (record_shapes): the host's outermost ops of a step, each as its name and Input Dims. A
signature that recurs REPEATS_AT_LEAST times in the step starts a stretch that is the same op for op, shape for shape,
at each recurrence, for BLOCK_OPS_AT_LEAST ops or more, or holding a layer stack (LAYER_OPS_AT_LEAST ops or more
followed at once by the same ops: an encoder's whole layers, pairs3 vit_captioner_reencodes_image's 62-op ViT of 3
blocks), its common run, and the run ends before the next recurrence:
after each run comes a loop body, the same ops each pass, whose shapes grow by one constant step from pass to pass
(a decoder whose KV cache grows a token at a time: an autoregressive loop, whose input does not change while it
decodes). The least evidence of that loop is two alike bodies whose shapes grow: the bodies between runs and the one
after the last run count alike, and a first body unlike the rest (a first pass without a cache takes another path) is
passed over; so three runs a step can show it (traces/pending2 t5_summarize_reencodes_source: 3 model calls a step,
the first decoder body 101 ops, the next two 109, growing a token each), a one-off repeat with nothing growing after
it cannot. fresh9 whisper_decode_reencodes_audio: the encoder (conv1d [32, 80, 3000], 12 layers) at
the head of each of the 9 model calls of a step, the 4-layer decoder after it growing each token.

A layer stack is not it: its layers repeat back to back (the run from one layer's start reaches the next layer, so
it is periodic, not a stretch with changing work between). Nor a loop whose every op keeps its shapes each pass (a
diffusion sampler, micro-batches of gradient accumulation, a static-cache decode): the run from one pass reaches the
next. A decode step with a growing cache repeats only a few ops before its shapes change (a cat with the past):
under BLOCK_OPS_AT_LEAST, and part of one layer, never two whole ones.

Price (in the graph): each repeat after a step's first loses its host time and the GPU work launched inside it with
its launch calls (as no_checkpointing removes a recomputed forward); the first stays.

What would make it fire falsely: the same computation on new data of the same shape each time. A loop over items
whose between-work the data sizes (a detector run image by image, fresh5 fasterrcnn_per_image) does not grow by a
constant step and is not counted; a streaming encoder over successive chunks with a decoder that grows a token each
pass would be, and the shapes cannot tell new data from old: the advice says "where its input is the same each time".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.span import PROFILER_STEP
from tracetriage.analyzers.model.trace import NONE, thread_keys
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers.host_windows import calls_inside, remove_host_windows
from tracetriage.analyzers.whatif.levers.knob import mirror_queued, outermost_ops, ranges_named
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

REPEATS_AT_LEAST = 3        # a loop's body: twice may be a deliberate pair (two inputs of one shape)
BLOCK_OPS_AT_LEAST = 100    # a model's worth of ops (an encoder's layers), not a layer's few ops with a cache's cat
LAYER_OPS_AT_LEAST = 8      # ... or a shorter stretch holding whole layers: two alike back to back, each this long
BODIES_AT_LEAST = 2        # alike loop bodies (between runs or after the last) whose shapes grow: 3 runs or more
MAX_ANCHOR_REPEATS = 256    # a signature that recurs more often is an elementwise op, not a block's head


@dataclass(frozen=True)
class Repeated(Assumption):
    ops: int = 0                # ops in the repeated stretch
    repeats: int = 0            # runs of it in a step (the first included)
    first_op: str = ""          # the stretch's first op and its input shapes
    first_dims: str = ""
    host_ns: int = 0            # the repeats after each step's first: host time, before
    gpu_ns: int = 0             # ... and their kernels' time
    kernels: int = 0


def _common_run(sig: np.ndarray, a: int, b: int, limit: int) -> int:
    """How many ops from a and from b are the same signature, up to limit."""
    n = min(limit, len(sig) - b, len(sig) - a)
    if n <= 0:
        return 0
    diff = np.flatnonzero(sig[a:a + n] != sig[b:b + n])
    return int(diff[0]) if len(diff) else n


def dims_ids(c: Context) -> np.ndarray:
    """For each of the trace's distinct argument records (Trace.shapes_raw), one id per distinct Input Dims and
    Input type; the last entry (index NONE = -1) for an op without any."""
    def make() -> np.ndarray:
        ids: dict = {}
        out = [ids.setdefault((bytes(r[0] or b""), bytes(r[1] or b"")) if r else (b"", b""), len(ids))
               for r in c.trace.shapes_raw]
        return np.array(out + [len(ids)], np.int64)
    return c.once("dims ids", make)


def _steps(c: Context, rows: np.ndarray) -> list[np.ndarray]:
    """The rows in each ProfilerStep range (the whole trace as one step without them)."""
    ev = c.trace.ev
    st = ranges_named(c, lambda n: n.startswith(PROFILER_STEP))
    if not len(st):
        return [rows]
    return [rows[(ev.start[rows] >= ev.start[s]) & (ev.start[rows] < ev.end[s])] for s in st.tolist()]


def _flat_ints(dims) -> list[int]:
    out: list[int] = []
    for d in dims or []:
        if isinstance(d, int):
            out.append(d)
        elif isinstance(d, list):
            out.extend(_flat_ints(d))
    return out


def _decode_loop_between(c: Context, rows: np.ndarray, sig: np.ndarray, at: np.ndarray, run: int) -> bool:
    """The work between the later runs is one loop body whose shapes grow by the same step each pass (a cache a
    position longer each token): the same op names in each, and the first op whose Input Dims differ between them has a
    dimension that rises by one constant step from pass to pass. A loop over new items whose sizes the data sets (a
    detector's proposals per image) does not rise so: the stretch there runs on new data each time."""
    ev = c.trace.ev
    pairs = list(zip(at[:-1].tolist(), at[1:].tolist()))
    # the bodies that end the loop alike (a first pass without a cache yet takes another path)
    while len(pairs) > 1 and pairs[0][1] - pairs[0][0] != pairs[-1][1] - pairs[-1][0]:
        pairs = pairs[1:]
    # ... and the body after the last run, where the step goes on with the same ops (the loop's last pass): a step
    # of 3 model calls holds 3 bodies, 2 of them between runs (traces/pending2 t5_summarize_reencodes_source)
    last, span = int(at[-1]), pairs[-1][1] - pairs[-1][0]
    if last + span <= len(rows) and (ev.name[rows[last + run:last + span]]
                                     == ev.name[rows[pairs[-1][0] + run:pairs[-1][1]]]).all():
        pairs.append((last, last + span))
    bodies = [rows[a + run:b] for a, b in pairs]
    if len(bodies) < BODIES_AT_LEAST or len({len(b) for b in bodies}) != 1 or not len(bodies[0]):
        return False
    names = np.stack([ev.name[b] for b in bodies])
    if (names != names[0]).any():
        return False
    firsts = np.stack([sig[a + run:b] for a, b in pairs])
    differs = np.flatnonzero((firsts != firsts[0]).any(axis=0))
    if not len(differs):
        return False
    dims = [_flat_ints(c.trace.shapes(int(b[differs[0]]))[0]) for b in bodies]
    if len({len(d) for d in dims}) != 1:
        return False
    steps = np.diff(np.array(dims, np.int64), axis=0)
    return bool(((steps == steps[0]) & (steps[0] > 0)).all(axis=0).any())


def _holds_layers(sig: np.ndarray, a: int, run: int) -> bool:
    """The stretch sig[a:a + run] holds a layer stack: some LAYER_OPS_AT_LEAST ops or more followed at once by the
    same ops, shape for shape (a ViT's blocks: 62 ops, 3 blocks of 18, pairs3 vit_captioner_reencodes_image). A
    decode step's stretch before its cache's cat holds part of one layer, never two whole ones, however many ops the
    model's prefix has."""
    if run < 2 * LAYER_OPS_AT_LEAST:
        return False
    part = sig[a:a + run]
    for i in range(run - 2 * LAYER_OPS_AT_LEAST + 1):
        later = np.flatnonzero(part[i + LAYER_OPS_AT_LEAST:run - (LAYER_OPS_AT_LEAST - 1)] == part[i])
        for j in (later + i + LAYER_OPS_AT_LEAST).tolist():
            if 2 * j - i <= run and (part[i:j] == part[j:2 * j - i]).all():
                return True
    return False


def repeated_blocks(c: Context) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per step and per repeated stretch: (the stretch's op rows of every run, each run's index) -- only the rows."""
    ev = c.trace.ev
    tops = outermost_ops(c)
    if not len(tops):
        return []
    key = thread_keys(ev, tops)
    ks, counts = np.unique(key, return_counts=True)
    main = tops[key == ks[np.argmax(counts)]]          # the thread that runs the model's ops
    found = []
    for rows in _steps(c, main):
        if len(rows) < REPEATS_AT_LEAST * 2 * LAYER_OPS_AT_LEAST:
            continue
        # the signature of an op: its name and its Input Dims and types (not its Concrete Inputs: a step counter or
        # a learning rate passed as a scalar changes each pass, the work does not)
        sig = ev.name[rows].astype(np.int64) * (1 << 32) + dims_ids(c)[ev.shape[rows]]
        uniq, first, inv, cnt = np.unique(sig, return_index=True, return_inverse=True, return_counts=True)
        inv = inv.ravel()
        covered = np.zeros(len(rows), bool)
        # each signature is tried once, at its first op, in the order the ops ran, where it recurs as a block's head
        # would; a signature whose first op an earlier block covers is not tried at all
        heads = np.flatnonzero((cnt >= REPEATS_AT_LEAST) & (cnt <= MAX_ANCHOR_REPEATS)
                               & (ev.shape[rows[first]] != NONE))
        heads = heads[np.argsort(first[heads], kind="stable")]
        by_sig = np.argsort(inv, kind="stable")          # the ops of each signature, in order, one slice per signature
        bounds = np.concatenate(([0], np.cumsum(cnt)))
        for u in heads.tolist():
            if covered[first[u]]:
                continue
            at = by_sig[bounds[u]:bounds[u + 1]]
            gap = int(at[1] - at[0])
            if _common_run(sig, int(at[0]), int(at[1]), gap) >= gap:
                continue        # periodic: the run from one repeat reaches the next (layers, passes, iterations)
            # the common run with each later repeat (one the step's end cuts short tells nothing)
            runs = [r for b in at[1:].tolist() for r in [_common_run(sig, int(at[0]), b, gap)] if r < len(sig) - b]
            run = min(runs) if runs else 0
            if run < BLOCK_OPS_AT_LEAST and not _holds_layers(sig, int(at[0]), run):
                continue
            if not _decode_loop_between(c, rows, sig, at, run):
                continue
            spans = [np.arange(a, min(a + run, len(rows))) for a in at.tolist()]
            if any(covered[s].any() for s in spans):
                continue
            for s in spans:
                covered[s] = True
            found.append((rows, at, run))
    return found


def apply(c: Context, p, o: Options) -> tuple[Repeated, dict]:
    g, ev, tr = c.g, c.trace.ev, c.trace
    found = repeated_blocks(c)
    if not found:
        return Repeated("compute_once", 0), {"repeats_gone": 0}
    starts, ends, keys = [], [], []
    for rows, at, run in found:
        for a in at[1:].tolist():             # the first run of each step stays
            blk = rows[a:a + run]
            starts.append(int(ev.start[blk[0]]))
            ends.append(int(ev.end[blk].max()))
            keys.append(int(thread_keys(ev, blk[0])))
    s, e, k = np.array(starts, np.int64), np.array(ends, np.int64), np.array(keys, np.int64)
    inside = calls_inside(c, s, e, k)
    gone = np.flatnonzero(g.g_linked & (g.g_call >= 0) & inside[np.maximum(g.g_call, 0)])
    gpu_ns = int(g.g_dur[gone].sum())
    # the launch calls and syncs inside go whole with their kernels (drop_gpu): a stretch computed once is never called
    # again, where keeping each launch at a launch's cost left t5_summarize_reencodes_source's 484 of them
    remove_host_windows(c, p, s, e, k, drop_gpu=True)
    mirror_queued(c, p)
    rows, at, run = max(found, key=lambda f: f[2] * len(f[1]))
    dims = tr.shapes(int(rows[at[0]]))[0]
    first_dims = "x".join(str(d) for d in dims[0]) if dims and isinstance(dims[0], list) and dims[0] \
        and all(isinstance(d, int) for d in dims[0]) else ""
    return (Repeated("compute_once", len(s), ops=run, repeats=len(at), first_op=tr.name_of(int(rows[at[0]])),
                     first_dims=first_dims, host_ns=int((e - s).sum()), gpu_ns=gpu_ns, kernels=len(gone)),
            {"repeats_gone": len(s)})


def _stretch(a: Repeated) -> str:
    head = f"{a.first_op} [{a.first_dims}]" if a.first_dims else a.first_op
    return f"the same {units.integer(a.ops)}-op stretch from {head}"


def says(a: Repeated) -> str:
    if a.count == 0:
        return "no stretch of work repeated shape for shape inside a step while the work between it changes"
    return (f"{_stretch(a)} runs {units.integer(a.repeats)} times in a step, its input shapes the same each time, "
            f"while the work between the runs changes: its {units.integer(a.count)} runs after each step's first "
            f"({units.integer(a.kernels)} kernels, {units.duration_ns(a.gpu_ns)}) go where its input is the same each "
            "time")


def repeats_gone(m: Measured) -> int:
    return m.whatif.lever(SPEC.name).detail.get("repeats_gone", 0)


def most_saved(a: Repeated) -> int:
    return a.host_ns + a.gpu_ns if a.count else 0


CHANGE = ("compute the repeated stretch once, before the loop, and pass its result in where its input is the same "
          "each time (a Hugging Face encoder-decoder: model(encoder_outputs=enc, ...) in place of "
          "model(input_features=..., ...) at each step)")


def _line(a: Assumption) -> str:
    if isinstance(a, Repeated) and a.count:
        return (f"compute {_stretch(a)} once, before the loop, and pass its result in where its input is the same "
                f"each time ({units.integer(a.repeats)} runs a step now; a Hugging Face encoder-decoder: "
                "model(encoder_outputs=enc, ...) in place of model(input_features=..., ...) at each step)")
    return CHANGE


SPEC = LeverSpec(
    name="compute_once", effort=1, cause=None, apply=apply, says=says, words="computing the repeated stretch once",
    fix="the repeated stretch computed once before the loop (encoder_outputs=enc)",
    recognise=Recognise(order=2, evidence="repeated_stretches", because="the repeated stretch ran once a step",
                        amount=repeats_gone, acted=lambda m: m.kernel_busy_ns, applied=went),
    applied_words="the repeated stretch computed once", weighed_only_if_found=True, removes_work=True,
    experiment=Experiment.TURN_KNOB, most_saved=most_saved,
    knob=Knob(change=CHANGE,
              evidence="a stretch of 100 or more outermost ops (or fewer holding two whole layers alike back to back), "
                       "the same names and Input Dims op for op, run 3 or more "
                       "times in one step, the work after its runs growing by one step a pass in two alike bodies or "
                       "more (not a layer stack, not a loop whose every pass is the same)",
              applies="every device, where the stretch's input is the same tensor each time (the shapes cannot tell)",
              model="each run after a step's first goes: its host time and the kernels launched inside it, with their "
                    "launch calls",
              guide="Hugging Face transformers: encoder_outputs in an encoder-decoder's forward; hoisting "
                    "loop-invariant work",
              line=_line))
