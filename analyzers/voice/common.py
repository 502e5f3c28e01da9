"""The words every audience shares: cause names, the one advice text per cause, what would waste
the week (each a view of the cause's record, tracetriage.analyzers.voice.causes), the evidence phrases,
the trace's own caveats, and why kernel time has no cost model.

The audience modules beside this one (report, diff, ranks, whatif ...) and the apps' words
(tracetriage.dashboard.words, tracetriage.drills.words) compose their sentences from these; none of
them decides a verdict or a threshold: they say what the analysis decided.
"""
from __future__ import annotations

from tracetriage.analyzers.model.attention_masks import attention_masked
from tracetriage.analyzers.model.evidence import Evidence, HostEvidence, LaunchEvidence, SyncEvidence, TransferEvidence
from tracetriage.analyzers.model.kernels import is_attention, matrix_precision_by_name
from tracetriage.analyzers.model.trace import GRAPH_UNJOINED_KINDS, STREAM_OVERLAP_NS, Caveat, capture_unrecorded
from tracetriage.analyzers.model.units import count, duration_ns, duration_us, gbps, integer, num, plural, share, size
from tracetriage.analyzers.model.verdicts import Cause, Construct
from tracetriage.analyzers.voice.analysis import Analysis
from tracetriage.analyzers.voice.causes import CAUSE_SPECS
from tracetriage.analyzers.voice.said import claim
from tracetriage.analyzers.whatif.levers import DATALOADER_WORKERS, SDPA

# --- the trace's own caveats -------------------------------------------------------------------------


def caveat(c: Caveat) -> str:
    if c.kind == "dropped_events":
        return (f"{count(c.count, 'complete event')} had a missing, negative, non-numeric or out-of-range ts/dur and "
                f"{'was' if c.count == 1 else 'were'} dropped")
    if c.kind == "duplicate_events":
        return (f"{count(c.count, 'event')} repeated an earlier one exactly (same category, name, times, thread and "
                "ids) and counted once")
    if c.kind == "no_gpu_activity":
        return ("no GPU activity in the trace (no kernels, copies or memsets: a CPU-only capture, or CUDA activity was "
                "not recorded): there is no GPU span, idle time or regime to report")
    if c.kind == "unlinked_gpu":
        return (f"{integer(c.count)} of {count(c.total, 'GPU activity', 'GPU activities')} have no launch call in "
                "the trace (missing correlation, or launched before profiling started): the idle before them "
                "counts as other")
    if c.kind == "unrecorded_launches":
        return (f"{integer(c.count)} of {count(c.total, 'GPU activity', 'GPU activities')} were launched through an "
                "API this capture does not record (the driver's cuLaunchKernel, as Triton and Inductor launch their "
                "kernels): no record was dropped (their correlation ids fall between the recorded calls'), and the "
                "idle before them is read from what the host ran in it")
    if c.kind == "dangling_external_id":
        # the calls left with no op at all: the id names none and no op encloses the call (moe_fp32_bs8_a100 said
        # "1 runtime call carries an External id that no cpu_op has" where 751 carry such an id, 750 of them placed
        # by the op around them: the caveat before this one)
        one = c.count == 1
        its, it = ("its", "it") if one else ("their", "them")
        return (f"{count(c.count, 'runtime call')} {'belongs' if one else 'belong'} to no op: {its} External id names "
                f"no cpu_op and no op encloses {it} on its thread: the GPU time of what "
                f"{'it launches' if one else 'they launch'} is listed under the kernel's name, not the op's")
    if c.kind in ("external_id_by_time", "external_id_own_id", "external_id_elsewhere"):
        # every runtime call the trace records (cudaFuncGetAttributes, cudaMalloc ...), not only its launches: said
        # so (a user counting 48 launches among 109 calls read "108 of 109 launch calls" as false); why the id names
        # no op around them, by what the id is (a ROCm trace was said to carry torch 2.0/2.1's bug)
        verb = "carries" if c.count == 1 else "carry"
        why = {"external_id_by_time": "torch 2.0/2.1 wrote the correlation id there, which names nothing or an "
                                      "unrelated op",
               "external_id_own_id": "a ROCm trace: each HIP runtime call's External id is its own, shared with the "
                                     "activity it launches, not its op's",
               "external_id_elsewhere": "the op it names does not enclose the call"}[c.kind]
        return (f"{integer(c.count)} of {count(c.total, 'runtime call')} {verb} an External id that names no op "
                f"around them ({why}): each is charged to the op that encloses it on its thread")
    if c.kind == "stream_overlap":
        verb = "starts" if c.count == 1 else "start"
        return (f"{count(c.count, 'GPU activity', 'GPU activities')} {verb} more than "
                f"{duration_us(STREAM_OVERLAP_NS / 1e3)} before the previous one on their stream ends, though a "
                "stream runs in order (a merged or edited trace?): busy and idle time count the overlapped time once")
    if c.kind == "graph_replay_unjoined":
        return (f"{integer(c.count)} of {count(c.total, 'GPU activity', 'GPU activities')} replayed from CUDA graphs "
                "match no capture in the trace: the graphs were captured outside the profiled window (or several "
                "captures fit), so their ops and shapes are not known; profile the capture too (warm-up inside the "
                "profiler), or pass the capture's trace (--graph-capture), to cost them by op")
    if c.kind == "graph_capture_unrecorded":
        # the capture is in the window, but none of its launch calls is: nothing to profile again, and no capture
        # elsewhere to pass (heldout-user19 gp_cudagraph)
        return (f"{integer(c.count)} of {count(c.total, 'GPU activity', 'GPU activities')} replayed from CUDA graphs "
                "are not joined to their ops: the trace holds the graphs' capture, but the profiler recorded none of "
                "the launch calls made under it, so which op launched each replayed kernel, and its shapes, is not "
                "known")
    raise ValueError(f"unknown caveat kind {c.kind!r}")


# --- causes and their advice -------------------------------------------------------------------------

# Views of each cause's record (tracetriage.analyzers.voice.causes): its name, its one advice text, what would waste
# the week while it holds the idle.
CAUSE_WORDS = {c: s.words for c, s in CAUSE_SPECS.items()}
ADVICE = {c: s.advice for c, s in CAUSE_SPECS.items()}
WASTE = {c: s.waste for c, s in CAUSE_SPECS.items()}


def op_words(name: str, device: str | None = None) -> str:
    """An op as a reader knows it: the profiler's name for the communication library's calls says what they are
    (`record_param_comms` is c10d recording a collective's parameters; its GPU time is the NCCL, or on AMD RCCL,
    kernels it launched)."""
    if name == "record_param_comms":
        lib = "RCCL" if device and ("AMD" in device or "Instinct" in device) else "NCCL"
        return f"{lib} collectives ({name})"
    return name


def cause_words(cause: Cause | None) -> str:
    return CAUSE_WORDS[cause] if cause is not None else "none"


def advice(cause: Cause, ev: Evidence | None = None, only: str | None = None,
           construct: Construct | None = None, workers_on: bool = False, compiled: bool = False,
           pinned: bool = False, fuse_chains: int | None = None,
           fuse_found: int = 0, pin_pays: bool = True, training: bool = False, lever=None,
           trains: bool = False) -> str:
    """The one advice text per cause, in the user's terms where the trace says whose code it is: the
    evidence's first experiment and the Next line's lever. The sync advice names the calls as the user
    wrote them (`.item()`, `torch.cuda.empty_cache()`), from the op whose syncs to remove (`only`), else
    the ops (or calls) that synced; host work inside the DataLoader asks for workers, and only then; pinned
    memory only where the batches' copies are not pinned already (`pinned`) and pinning them pays (`pin_pays`: the
    host-to-device copies hold PIN_PAYS of the span); launch overhead of a training loop (`training`) whose kernels
    run shorter than a launch (a loop over a DataLoader with an optimizer step or a backward) asks for a bigger batch
    first; launches left outside the CUDA graphs of a step that trains (`trains`: a backward or an optimizer step in the
    trace) ask for the whole step in one graph."""
    # the Next lever's assumption: dataloader_workers' start-up, lone batch, flat per-batch cost; cuda_graphs' growing
    # KV cache
    loader = lever if getattr(lever, "lever", "") == DATALOADER_WORKERS else None
    workers_start_up, lone_batch = getattr(loader, "start_up", False), getattr(loader, "lone", False)
    if cause is Cause.LAUNCH_OVERHEAD and getattr(lever, "cache_to", 0):
        # a graph replays fixed shapes: a decode whose KV cache grows a token each step is no graph as it stands
        # (whatif.levers.growing_cache)
        return ("cut launches, which here takes a restructure: the decode's KV cache grows a token each step (its "
                f"attention reads keys {integer(lever.cache_from)} to {integer(lever.cache_to)} tokens long), a new "
                "shape every step, so "
                "neither torch.compile(mode='reduce-overhead') nor torch.cuda.graph captures the loop as written; a "
                "static cache first (generate(..., cache_implementation=\"static\") with the decode step compiled, "
                "mode='reduce-overhead'), or more sequences per call (bigger batch); the prediction is the bound "
                "of every launch gone, what that restructure could buy, not what a wrapper does")
    if cause is Cause.SYNCHRONIZATION and (only or isinstance(ev, SyncEvidence) and (ev.called_from or ev.sync_calls)):
        if isinstance(ev, SyncEvidence) and ev.waits_on_dependency:
            # queued work waited on a cross-stream dependency: nothing to remove on the host
            return (f"make the dependency ready sooner: the work waits on {ev.waited_on[0].name}; issue what it "
                    "waits for (the producing work, the event record) earlier, or drop the wait if the streams need "
                    "not order")
        if construct is Construct.ALLOCATOR:
            return ("stop emptying the allocator's cache in the loop (torch.cuda.empty_cache(): each call syncs in "
                    "cudaFree and the next step pays cudaMalloc again); let the caching allocator keep its blocks")
        names = [only] if only else [x.name for x in (ev.called_from or ev.sync_calls)[:3]]
        return ADVICE[cause].replace("the syncs:", f"the syncs ({user_calls(names)}):", 1)
    if cause is Cause.LAUNCH_OVERHEAD and isinstance(ev, LaunchEvidence) and ev.graph_launches \
            and ev.graphed_kernels >= ev.kernels:
        # every kernel is replayed from a graph: no launch is left outside it, the device waits between replays
        return (f"put more work in each graph replay: every kernel here runs inside the CUDA graphs the trace "
                f"replays ({count(ev.graph_launches, 'graph launch', 'graph launches')}), so the device waits between "
                "replays on the host's loop and the graph launch call: capture several steps in one graph, or more "
                "work per step (a bigger batch)")
    if cause is Cause.LAUNCH_OVERHEAD and isinstance(ev, LaunchEvidence) and ev.graph_launches and trains:
        # graphs replayed for the model (make_graphed_callables) between an eager loss, backward glue and optimizer
        # step: the engineer's knob is one graph of the whole step (public trace_with_make_graphed_callables was told
        # to take host work off the critical path; its whole-step capture measured 1.33 -> 0.90 ms a step)
        return ("cut the launches left outside the CUDA graphs the trace already replays "
                f"({count(ev.graph_launches, 'graph launch', 'graph launches')}): capture the whole training step "
                "(forward, loss, loss.backward() and optimizer.step()) in one torch.cuda.graph and replay it, "
                "copying each batch into its static inputs")
    if cause is Cause.LAUNCH_OVERHEAD and isinstance(ev, LaunchEvidence) and ev.graph_launches:
        # fusion named only where the what-if finds chains to fuse: gpt-graphs read "fuse what stays outside
        # (torch.compile)" beside "Would waste the week: fusing the elementwise chains, predicted 0%"
        fuse = "" if fuse_chains == 0 else " fuse what stays outside (torch.compile),"
        return ("cut the launches left outside the CUDA graphs the trace already replays "
                f"({count(ev.graph_launches, 'graph launch', 'graph launches')}): capture more of the step in the "
                f"graph,{fuse} or more work per launch")
    if cause is Cause.LAUNCH_OVERHEAD and training and isinstance(ev, LaunchEvidence) and tiny_kernels(ev):
        # a training step of tiny kernels costs its launches whatever the batch: more samples per step is the knob
        # (a public RTX 3080 MLP at batch 16, kernels of 2 µs behind 3 µs launches, was told num_workers and
        # pin_memory for copies of 3.5 µs)
        return ("more work per launch: a bigger batch (DataLoader(..., batch_size=<larger>)): the kernels run "
                f"{duration_us(ev.kernel_median_us)} (median) against {duration_us(ev.launch_call_median_us)} for "
                "each launch, so a step's launches cost about the same at a larger batch and each sample costs less "
                "(not priced: the trace holds one batch size); or, priced here, capture the step in CUDA graphs "
                "(torch.compile(mode='reduce-overhead'))")
    # compiled already (the idle inside its region, or anywhere in a trace that runs compiled code): never
    # "torch.compile to fuse" again (issue 32)
    if cause is Cause.LAUNCH_OVERHEAD and (construct is Construct.COMPILED or compiled):
        return ("capture the compiled code in CUDA graphs: torch.compile(mode='reduce-overhead') replays each compiled "
                "call (not the whole step) as one graph launch; or more work per launch (bigger batch)")
    # the what-if finds no eager elementwise chain worth fusing (`fuse_chains` 0): the launches go by graphs or by more
    # work per launch, and torch.compile is named only for its graphs (heldout-user3 andrewlala_resnet50_t4:
    # "torch.compile to fuse, then CUDA graphs" where fuse priced 0% and the saving was all CUDA graphs')
    # where the lever found chains (`fuse_found`) but fusing them one compiled call each saves little, the clause says
    # so: "prices nothing" read as "fusion gains nothing" on a launch-bound decode loop of 248 elementwise kernels in
    # 437 (heldout-user12 decode_h100_sync)
    if cause is Cause.LAUNCH_OVERHEAD and fuse_chains == 0:
        why = ("fusing the elementwise chains on their own (one compiled call each) saves little here: each call costs "
               "the host about what the chain's eager launches do" if fuse_found else
               "the what-if finds no eager chain of elementwise ops to fuse")
        return ("cut launches: capture the step in CUDA graphs (torch.compile(mode='reduce-overhead'), or "
                "torch.cuda.graph by hand), or more work per launch (bigger batch); " + why)
    if (cause is Cause.DATA_TRANSFER and isinstance(ev, TransferEvidence) and ev.copies
            and "Pinned" in ev.copies[0].name):
        c = ev.copies[0]
        rate = f" at {gbps(c.gbps)}" if c.gbps else ""
        return (f"overlap the copies with compute: they are pinned already ({c.name}{rate}), so copy with "
                "non_blocking=True on a side stream and prefetch the next one, or keep the data resident on the device")
    if cause is Cause.HOST_WORK and construct is Construct.DATALOADER and workers_on and lone_batch:
        # the trace's only batch (dataloader_workers' 6.): a first batch is no steady state
        return ("keep the DataLoader's workers and profile a later batch: the trace holds one batch, whose wait in "
                "_MultiProcessingDataLoaderIter.__next__ is most likely the iterator's start-up (its workers "
                "starting, each making its first batch), not a steady shortfall, so DataLoader(..., "
                "persistent_workers=True) and torch.profiler.schedule(wait=1, warmup=1, active=3) to see whether "
                "the workers keep up (only then a lighter per-sample transform or more workers)")
    if cause is Cause.HOST_WORK and construct is Construct.DATALOADER and workers_on and workers_start_up:
        # the wait is the iterator's start (dataloader_workers' 5.): once per new iterator, not a shortfall
        return ("keep the DataLoader's workers across epochs: the step waits once per new iterator (each epoch) for "
                "its start-up (its workers starting and each making its first batch, in the first "
                "_MultiProcessingDataLoaderIter.__next__), not for workers falling behind (the other batches wait "
                "far less), so DataLoader(..., persistent_workers=True) or longer epochs; more workers make the "
                "start-up longer")
    if cause is Cause.HOST_WORK and construct is Construct.DATALOADER and workers_on and getattr(loader, "flat_ns", 0):
        # the same cost every batch (dataloader_workers' 7.): receiving a batch, which more workers do not shrink
        return ("cut the main process's cost per batch: each batch costs it about "
                f"{duration_ns(loader.flat_ns)} inside _MultiProcessingDataLoaderIter.__next__, flat from batch to "
                "batch, which is receiving a batch the workers made (the queue's get, unpickling its tensors, the "
                "hand-off), not workers falling behind (those make it wait unevenly), so more workers or a deeper "
                "prefetch do not shrink it: fewer, bigger batches (a larger batch_size) or the dataset kept on the GPU "
                "and sliced there (timing num_workers doubled tells: a receive cost stays)")
    if cause is Cause.HOST_WORK and construct is Construct.DATALOADER and workers_on:
        # the trace shows _MultiProcessingDataLoaderIter: the workers are on, and the step still waits for them
        return ("make the DataLoader's workers keep up: they are on already (_MultiProcessingDataLoaderIter) and the "
                "step still waits for batches, so lighten the per-sample transform (or move it to the GPU), raise "
                "num_workers or prefetch_factor" + (" (the batches' copies are pinned already)" if pinned else
                                                    ", and pin_memory=True with .to(device, non_blocking=True)"
                                                    if pin_pays else ""))
    if cause is Cause.HOST_WORK and construct is Construct.DATALOADER:
        return ("load the batches in worker processes: DataLoader(..., "
                f"{claim('next.asks.dataloader_workers', 4, 'num_workers=4')}, "
                + ("" if pinned or not pin_pays else "pin_memory=True, ") +
                "persistent_workers=True)" + (" and .to(device, non_blocking=True)" if pin_pays else "")
                + ", so the next batch is ready when the step ends")
    said = ADVICE[cause]
    if "torch.compile to fuse" in said:   # the generic launch advice: never for code compiled already
        claim("next.asks.torch_compile", 1 if fuse_chains is None else fuse_chains, "torch.compile to fuse")
    return said


# The calls a user writes that sync, by the op (or runtime call, when Python made it straight) the trace records.
USER_SYNC_CALLS = {
    "aten::item": ".item()", "aten::_local_scalar_dense": ".item()", "aten::is_nonzero": "a tensor in an if (bool(t))",
    "aten::equal": "torch.equal", "aten::nonzero": "torch.nonzero", "aten::index": "boolean-mask indexing (x[mask])",
    "aten::masked_select": "boolean-mask indexing (x[mask])", "aten::to": ".cpu() / .tolist() / .numpy()",
    "aten::_to_copy": ".cpu() / .tolist() / .numpy()", "aten::copy_": ".cpu() / .copy_() to the host",
    "aten::unique": "torch.unique", "aten::repeat_interleave": "torch.repeat_interleave (no output_size)",
    "cudaDeviceSynchronize": "torch.cuda.synchronize()", "hipDeviceSynchronize": "torch.cuda.synchronize()",
    "cudaStreamSynchronize": "stream.synchronize()", "hipStreamSynchronize": "stream.synchronize()",
    "cudaEventSynchronize": "event.synchronize()", "hipEventSynchronize": "event.synchronize()",
    "cudaFree": "torch.cuda.empty_cache()", "hipFree": "torch.cuda.empty_cache()",
}
# print(tensor) formats the values: masked_select, .item() and bool() on the device's tensor, each a sync
_PRINT_SIGNATURE = {"aten::is_nonzero", "aten::item", "aten::masked_select"}


def user_calls(names: list[str]) -> str:
    """'.item()' for ['aten::item']; each name as the user wrote the call where the trace says it, else as traced."""
    if len(_PRINT_SIGNATURE & set(names)) >= 2:
        return "print(tensor) or tensor formatting: masked_select, .item() and bool() on device values"
    said = []
    for n in names:
        w = USER_SYNC_CALLS.get(n)
        w = f"{w}, {n}" if w else n
        if w not in said:
            said.append(w)
    return "; ".join(said)

# Cheaper precisions, in the order a user steps down to them, with the datasheet name the table keys them by.
_STEP_DOWN = {"fp32": ("tf32", "bf16", "fp16"), "tf32": ("bf16", "fp16"), "bf16": ("fp8",), "fp16": ("fp8",),
              "fp8": ()}
_PRECISION_WORDS = {"tf32": "TF32", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8"}
_PRECISION_KEYS = {w: k for k, w in _PRECISION_WORDS.items()}


def cheaper_precisions(peaks, dtype: str | None) -> list[str] | None:
    """The precisions below `dtype` that this device runs faster on its tensor cores (no TF32 or bf16 below
    Ampere, no fp8 below Hopper/Ada/MI300: the peaks table gives those the rate they fall back to); None when
    the device is unknown."""
    if peaks is None:
        return None
    d = dtype if dtype in _STEP_DOWN else "fp32"
    fast = [x for x in _STEP_DOWN[d] if x in peaks.flops_per_s and peaks.flops(x) > 1.05 * peaks.flops(d)]
    if "bf16" in fast and "fp16" in fast:    # one half precision is enough to name: bf16 keeps fp32's range
        fast.remove("fp16")
    return [_PRECISION_WORDS[x] for x in fast]


def skip_work(attention: bool) -> str:
    """Work a compute-bound span can skip. Where it runs attention: the padded positions a batch of uneven sequences
    computes (variable-length attention), which any model may skip; not causal masks, which change what a
    bidirectional encoder computes (fresh11 reranker_compiled_bf16_healthy, a BERT cross-encoder, was offered them)
    and which the trace cannot tell from a decoder's. An MLP has neither."""
    return ("skip work (padded positions: variable-length attention in place of padded batches; smaller shapes)"
            if attention else "skip work (smaller shapes)")


_CHEAPER = {"fp32": 0, "tf32": 1, "bf16": 2, "fp16": 2, "fp8": 3}


def cheaper_arithmetic(peaks, dtype: str | None, *, headroom: bool = False, attention: bool = False,
                       named: str | None = None, replayed: bool = False) -> str:
    """What cheaper arithmetic means on this device for work in `dtype`; `named`: the precision the top GEMMs and
    convolutions compute in by their kernels' names (a graph replay's GEMMs carry no shapes: CUTLASS's s1688gemm is
    TF32 on fp32 data), taken where it is the cheaper; `attention`: the span runs attention (unpadding skips some);
    `replayed`: most kernels replay from CUDA graphs captured outside the trace (the change goes where they are
    captured: a replay runs what was captured)."""
    if named in _CHEAPER and (dtype not in _CHEAPER or _CHEAPER[named] > _CHEAPER[dtype]):
        dtype = named
    lower = cheaper_precisions(peaks, dtype)
    if lower is None:
        return _cheaper_on_an_unknown_device(dtype, headroom=headroom, attention=attention, replayed=replayed)
    if not lower:
        why = f"({dtype or 'fp32'} is already the cheapest precision this device runs faster)"
        return f"less arithmetic {why}" if headroom else f"do less arithmetic {why}: {skip_work(attention)}"
    on = " or ".join(claim(f"next.precision.{_PRECISION_KEYS[x]}", 1, x) for x in lower)
    if headroom:
        return f"cheaper arithmetic ({on} on tensor cores) or less of it"
    return f"do less arithmetic or cheaper arithmetic: lower precision on tensor cores ({on}), {skip_work(attention)}"


def _cheaper_on_an_unknown_device(dtype: str | None, *, headroom: bool, attention: bool, replayed: bool) -> str:
    """Cheaper arithmetic on a device the peak table does not hold: only what its own kernels show it has. TF32
    tensor-core kernels run on Ampere or later, which all run bf16 on tensor cores; fp8 is named nowhere (Ada, Hopper
    and later have it, an unknown card may not: public trace_with_manual_capture, an RTX 5080, was told "bf16/fp8")."""
    if dtype == "tf32":
        if headroom:
            return "cheaper arithmetic (bf16 on tensor cores: the TF32 GEMMs show this GPU has them) or less of it"
        where = " inside the graph's capture" if replayed else ""
        return ("do less arithmetic or cheaper arithmetic: bf16 on tensor cores (torch.autocast('cuda', "
                f"dtype=torch.bfloat16) around the forward and the loss{where}: its GEMMs run TF32, so this GPU has "
                "bf16 tensor cores), " + skip_work(attention))
    if dtype in ("bf16", "fp16", "fp8"):
        why = f"({dtype} already; whether this device runs a cheaper precision faster is not in the peak table)"
        return f"less arithmetic {why}" if headroom else f"do less arithmetic {why}: {skip_work(attention)}"
    if headroom:
        return "cheaper arithmetic (lower precision) or less of it"
    return ("do less arithmetic or cheaper arithmetic: lower precision on tensor cores (TF32 or bf16 where this GPU "
            "has them), " + skip_work(attention))


COMPUTE_WASTE = "fusing elementwise ops or CUDA graphs: launches and bytes are not the limit"

REGIME_ADVICE = {
    "memory": "move fewer bytes: fuse elementwise chains, keep activations/weights in lower precision, avoid "
              "materialised copies",
    "latency": "give the kernels a better algorithm or more work per launch: torch.backends.cudnn.benchmark = True "
               "(cuDNN/MIOpen then time their algorithms for these shapes), batch the small ops (a bigger batch, "
               "fused or grouped kernels), or write a better kernel for these shapes",
}


RANGE_NAMED = 0.25   # a range holding this share of the host work is named (as a construct on the Idle line)


def range_phrase(name: str) -> str:
    """A range the host-work time lies in, with what it is where the name says so."""
    if "DataLoader" in name:
        return f"{name} (the DataLoader making batches: the input pipeline)"
    if name.startswith("Optimizer."):
        return f"{name} (the optimizer's Python)"
    return name


def copy_phrase(ev: TransferEvidence) -> str:
    """The copy kind that holds the most time, a memset only where no copy is there: a memset moves nothing over the
    link to pin or overlap (bert_pad_max_length-before named "295x Memset (Device), 1.2 kB" as the copies to pin)."""
    if not ev.copies:
        return "copies"
    c = next((k for k in ev.copies if not k.name.startswith("Memset")), ev.copies[0])
    rate = f" at {gbps(c.gbps)}" if c.gbps else ""
    return f"{integer(c.count)}× {c.name}, {size(c.bytes)}{rate}"


SETUP_HOLDS_HOST_WORK = 0.5   # one-time set-up holds this share of the host-work gaps: they are said as set-up


def setup_holds_host_work(ev: Evidence) -> bool:
    """Most of the host-work idle is the host in one-time set-up (first calls), not host work that recurs."""
    return isinstance(ev, HostEvidence) and ev.total_us > 0 and ev.setup_us >= SETUP_HOLDS_HOST_WORK * ev.total_us


PIN_PAYS = 0.01   # pinned memory is advised only for host-to-device copies holding this share of the span: under it
                  # the knob buys under 1% (six 3.5 µs copies of a 4.7 ms span were told pin_memory=True)


def tiny_kernels(ev: LaunchEvidence) -> bool:
    """The kernels run shorter (median) than one launch call costs the host: the launches set the pace."""
    return ev.launch_call_median_us is not None and 0 < ev.kernel_median_us < ev.launch_call_median_us


WHOLE_GAP_SAID = 1.1        # the whole gaps' median is said where it passes the cause's pieces' by a tenth
DISPATCH_GAP_LAUNCHES = 3   # a launch-overhead gap past this many launch calls is mostly the framework's dispatch
ONE_GAP_HOLDS = 0.5   # one gap holding this share of its cause's idle is said by itself: a median hides it
LARGEST_SAID = 5      # ... and the largest gap is said beside the median where it is this many times longer (a
                      # public RTX 3080 trace's 2.1 ms main-thread gap a step, beside a median of 218 µs)


def gaps_phrase(ev: Evidence) -> str:
    """'N gaps with a median of X', or where one gap holds most of the cause's idle, that gap: a public RTX 3080
    trace's 654 ms host gap, 95% of its host-work idle, was said as '3 gaps with a median of 17.8 ms'."""
    # (of two gaps one always holds half: there, three quarters)
    if ev.gaps > 1 and ev.total_us and ev.max_gap_us >= max(ONE_GAP_HOLDS, 1.5 / ev.gaps) * ev.total_us:
        return (f"{plural(ev.gaps, 'gap')}, the largest {duration_us(ev.max_gap_us)} "
                f"({share(ev.max_gap_us / ev.total_us)} of it),")
    largest = (f" (the largest {duration_us(ev.max_gap_us)})"
               if ev.gaps > 2 and ev.max_gap_us >= LARGEST_SAID * ev.median_gap_us else "")
    return f"{plural(ev.gaps, 'gap')} with a median of {duration_us(ev.median_gap_us)}{largest}"


def _op_held(ev: HostEvidence) -> str:
    """The traced op's own time in the gaps, where one op holds much of the host work (it is the story)."""
    top = ev.host_events[0] if ev.host_events else None
    if top is None or not ev.total_us or top.us < RANGE_NAMED * ev.total_us:
        return ""
    rest = "".join(f", {o.name}" for o in ev.host_events[1:3])
    return f"{top.name} {duration_us(top.us)} in {count(top.count, 'call')} ({share(top.us / ev.total_us)} of it){rest}"


def evidence_phrase(ev: Evidence) -> str:
    """What a cause's verdict rests on, in one clause: the Idle line's 'mostly ...'."""
    if isinstance(ev, LaunchEvidence):
        ops = ", ".join(o.name for o in ev.launching_ops[:3])
        cost = (f"a launch call takes {duration_us(ev.launch_call_median_us)}" if ev.launch_call_median_us is not None
                else "the trace has no launch call to measure what launching costs")
        if ev.launch_call_median_us is not None and ev.graph_launches and ev.graphed_kernels >= ev.kernels:
            # every launch call is a graph launch: its cost is one replay's, of many kernels, not one kernel's
            each = ev.kernels / ev.graph_launches
            cost = (f"a launch call (each a CUDA graph launch of {num(each)} kernels on average) takes "
                    f"{duration_us(ev.launch_call_median_us)}")
        # a gap several launch calls long is mostly the framework's dispatch between launches, not the call itself
        # (heldout-user13 eager-adam: 39 µs gaps beside a 12 µs launch were said to be launch overhead alone)
        dispatch = ("; a gap is over three launch calls long: most of it is dispatch between launches (Python and "
                    "the ops' C++), not the launch call" if ev.launch_call_median_us
                    and ev.median_gap_us > DISPATCH_GAP_LAUNCHES * ev.launch_call_median_us
                    and ev.queued_gaps < ev.gaps / 2 else "")
        gaps = f"{plural(ev.gaps, 'gap')} with a median of {duration_us(ev.median_gap_us)} between kernels whose " \
               f"median run is {duration_us(ev.kernel_median_us)}"
        if ev.shared_gaps and ev.whole_gap_median_us > WHOLE_GAP_SAID * ev.median_gap_us:
            # gaps that are part another cause move the median a reader measures between kernels: the whole gaps'
            # median, the launch overhead's own part said beside it (leimao's eager MLP: '250 gaps with a median of
            # 15.1 µs', the launch-overhead pieces' median, where the gaps between kernels had one of 24.5 µs)
            gaps = (f"{plural(ev.whole_gaps, 'gap')} with a median of {duration_us(ev.whole_gap_median_us)} between "
                    f"kernels whose median run is {duration_us(ev.kernel_median_us)}, launch overhead a median "
                    f"{duration_us(ev.part_median_us)} of each ({integer(ev.shared_gaps)} also part another cause)")
        return (f"{gaps}; {cost}" + (f" (launched by {ops})" if ops else "") + dispatch)
    if isinstance(ev, HostEvidence):
        traced = ", ".join(o.name for o in ev.host_events[:3])
        held = ", ".join(o.name for o in ev.python_functions[:2])
        what = []
        if held:   # recorded with stacks: the Python that held the host is in the trace
            what.append(f"in Python: {held}")
        elif ev.untraced_share >= 0.005:   # no Python frames recorded there: the host's time is untraced
            what.append(f"{share(ev.untraced_share)} untraced: Python, numpy, sleeping")
        # the ranges the framework names (the DataLoader's, the optimizer's) first: the user's own phase around them
        # says less about what the host did (probe-host-dataloader: host_phase around enumerate(DataLoader))
        ranges = sorted(ev.ranges, key=lambda r: range_phrase(r.name) == r.name)
        inside = [f"{share(r.us / ev.total_us)} inside {range_phrase(r.name)}" for r in ranges[:2]
                  if ev.total_us and r.us >= RANGE_NAMED * ev.total_us]
        if inside:   # no op there, but the user's range names it
            what.append(", ".join(inside))
        if traced:
            what.append(f"traced CPU ops: {_op_held(ev) or traced}")
        if setup_holds_host_work(ev):
            # the host sat in first calls (inside a launch loading its module, in cudaMalloc, a first cuDNN call):
            # set-up, as the Caveat and a warm-up Next call it, not code that issues no GPU work every step
            firsts = ", ".join(w.name for w in ev.warmup[:2])
            return (f"{plural(ev.gaps, 'gap')} with a median of {duration_us(ev.median_gap_us)}, "
                    f"{duration_us(ev.setup_us)} of {'it' if ev.gaps == 1 else 'them'} the host in one-time set-up"
                    + (f" (first calls of {firsts})" if firsts else "") + ", which the steady state never pays"
                    + (f" (traced CPU ops in the gaps: {traced})" if traced else ""))
        return (f"{gaps_phrase(ev)} in which the host issued no GPU work" + (f" ({'; '.join(what)})" if what else ""))
    if isinstance(ev, SyncEvidence):
        calls = ", ".join(f"{c.name} ×{integer(c.count)}" for c in ev.sync_calls[:2])
        src = ", ".join(c.name for c in ev.called_from[:2])
        if ev.waits_on_dependency:
            return (f"queued work waited {duration_us(sum(w.us for w in ev.waited_on))} on "
                    f"{waited_phrase(ev.waited_on)}, not on its launch")
        return (f"{plural(ev.drains, 'drain')}, a median of {duration_us(ev.median_drain_us)} each, "
                f"after {calls or 'syncs'}"
                + (f" called from {src}" if src else ""))
    if isinstance(ev, TransferEvidence):
        waited = (f"; queued work waited {duration_us(sum(w.us for w in ev.waited_on))} while the host staged "
                  f"{waited_phrase(ev.waited_on)}") if ev.waited_on else ""
        return f"{count(ev.copy_count, 'copy', 'copies')}, mostly {copy_phrase(ev)}{waited}"
    if getattr(ev, "waited_on", ()) or (ev.gaps and not ev.unlinked_gaps):
        return (f"{plural(ev.gaps, 'gap')} in which queued work waited on a dependency the trace does not record "
                "(no stream-wait, sync or copy call around it)")
    late = ev.gaps - ev.unlinked_gaps
    if late > 0:
        # both kinds: each counted apart, so the unlinked count agrees with the Caveat's activities without a launch
        # call (leimao make_graphed_callables: "8 gaps with no launch call" beside "2 of 282 GPU activities have no
        # launch call": 7 of the gaps ended in work whose launch call returned 100-270 µs before it started)
        return (f"{plural(late, 'gap')} in which work already launched started late with nothing in the trace to "
                f"wait on (no stream-wait, sync or copy call around it), {integer(ev.unlinked_gaps)} before work with "
                "no launch call in the trace")
    return f"{plural(ev.gaps, 'gap')} with no launch call in the trace"


def waited_phrase(waited) -> str:
    return ", ".join(f"{w.name} ×{integer(w.count)}" for w in waited[:2])


def stream_waits_words(ev: Evidence | None) -> str | None:
    """The synchronization idle named for what it is when most of it is queued work waiting on another stream's
    event (SyncEvidence.waits_on_dependency): the GPU waited, not the host in a sync call (heldout-user21
    moeep_after rank 0: "synchronization 24%" for queued work waiting on cudaStreamWaitEvent behind the all_to_alls);
    None otherwise."""
    if isinstance(ev, SyncEvidence) and ev.waits_on_dependency:
        return "cross-stream waits (on the GPU, not a host sync)"
    return None


def mostly(a: Analysis) -> str:
    """'<cause words>: <its evidence>' for the dominant cause of an analysis; 'none' without idle."""
    dom = a.dominant
    if dom is None:
        return "none"
    ev = a.evidence[dom]
    most = ", most of it one-time set-up" if setup_holds_host_work(ev) else ""
    return f"{stream_waits_words(ev) or CAUSE_WORDS[dom]}{most}: {evidence_phrase(ev)}"


# --- framework constructs ---------------------------------------------------------------------------

CONSTRUCT_WORDS = {
    Construct.SETUP: "one-time set-up", Construct.COMPILE: "torch.compile compiling",
    Construct.ALLOCATOR: "the caching allocator (cudaMalloc/cudaFree)",
    Construct.DATALOADER: "the DataLoader's __next__",
    Construct.OPTIMIZER: "the optimizer step", Construct.COLLECTIVE: "collectives",
    Construct.BACKWARD: "autograd backward",
    Construct.COMPILED: "torch.compile's compiled code", Construct.MODULE: "nn.Module forwards",
    Construct.USER: "your own code",
}


def construct_phrase(x, optimizer: str | None = None) -> str:
    """'Optimizer.step (AdamW): 12,800 launches in 8 steps' for a construct's share of a trace."""
    what = CONSTRUCT_WORDS[x.construct]
    if x.construct is Construct.OPTIMIZER and optimizer:
        what = f"{optimizer}'s step (Optimizer.step)"
    elif x.names and x.construct in (Construct.COMPILED, Construct.COLLECTIVE, Construct.BACKWARD):
        what += f" ({x.names[0]})"
    launches = f": {count(x.launches, 'launch', 'launches')} in {count(x.ranges, 'call')}" if x.launches else ""
    return what + launches


# --- why kernel time has no cost model ---------------------------------------------------------------

UNCOSTED_WORDS = {
    "no_shapes": "their ops recorded no shapes (record_shapes was off)",
    "no_launching_op": "no recorded CPU op launched them (CUDA-graph replays, or CPU activity not captured)",
    "launched_outside_ops": "they were launched outside any recorded op (a C++/CUDA extension's kernel, or a library "
                            "called straight from Python): no op's shapes say what they compute",
    "no_cost_model": "their ops have no cost model here (custom or library ops)",
    "graph_replay": "they are CUDA-graph replays (one launch call, no op of their own)",
    # the capture in the trace, with none of the launches made under it: their ops are there, not which kernel is whose
    "graph_replay_unrecorded": "they are CUDA-graph replays whose capture the trace holds without the launch calls "
                               "made under it, so which op each kernel is, and its shapes, are not known",
    "above_peak": "their ops' shapes would put them above the device's peak (an attribution error)",
}


# why a bound's kernels, placed by their names, have no rate in the trace: said in the Regime line's parenthesis
NAMED_WHY_WORDS = {
    "no_shapes": "their ops recorded no shapes (record_shapes was off)",
    "no_launching_op": "no recorded op launched them (queued before the profiled window, or CPU activity not "
                       "captured)",
    "launched_outside_ops": "they were launched outside any recorded op, so no op's shapes say what they compute",
    "no_cost_model": "their ops have no cost model here (custom or library ops)",
    # their shapes are not known, not absent: the ops that had them ran at a capture the trace lacks (it said 'no op
    # recorded their shapes', which reads as record_shapes off, of a trace recorded with shapes)
    "graph_replay": "they were replayed from CUDA graphs whose capture is not in the trace, so their ops and shapes "
                    "are not known",
    # the capture in the trace, with none of the launches made under it (loading.graphs: graph_capture_unrecorded)
    "graph_replay_unrecorded": "they were replayed from CUDA graphs whose capture the trace holds without the "
                               "launch calls made under it, so which op each kernel is, and its shapes, are not known",
}


def named_why_phrase(v, trace) -> str:
    """Why the verdict's bound's kernels carry no FLOPs or bytes: the one or two reasons holding most of their time
    (a trace recorded with shapes whose kernels were CUDA-graph replays said 'no shapes recorded')."""
    items = list(v.named_why_us)[:2]
    if len(items) == 2 and v.named_why_us[items[1]] < 0.05 * sum(v.named_why_us.values()):
        items = items[:1]
    unrecorded = capture_unrecorded(trace)
    return "; ".join(NAMED_WHY_WORDS["graph_replay_unrecorded" if unrecorded and w == "graph_replay" else w]
                     for w in items) or "no op recorded their shapes"


def uncosted_phrase(v, key: str | None = "regime.uncosted_why", trace=None) -> str:
    """Why kernel time has no cost model: the largest reasons, in words (each share claimed as `key`.REASON on the
    Regime line; `key` None elsewhere); given the trace, replays whose capture it holds unrecorded say so."""
    unrecorded = trace is not None and capture_unrecorded(trace)
    tot = sum(v.uncosted_why_us.values()) or 1.0
    items = list(v.uncosted_why_us.items())[:2]

    def said(w: str, x: float) -> str:
        return claim(f"{key}.{w}", x, share(x)) if key else share(x)
    parts = [UNCOSTED_WORDS["graph_replay_unrecorded" if unrecorded and w == "graph_replay" else w]
             + (f" ({said(w, us / tot)})" if len(items) > 1 else "") for w, us in items]
    return "; ".join(parts) or "their kernels carry no cost"


# --- regimes -----------------------------------------------------------------------------------------

REGIME = {"compute": "compute-bound", "memory": "memory-bound", "overhead": "overhead-bound", "unknown": "unknown",
          "latency": "latency-bound", "communication": "communication-bound"}


def pinning_pays(a: Analysis) -> bool:
    """The host-to-device copies hold PIN_PAYS of the span or more: pinning them can buy something worth a clause."""
    ev = a.evidence.get(Cause.DATA_TRANSFER)
    h2d_us = sum(c.us for c in getattr(ev, "copies", ()) if "HtoD" in c.name)
    return bool(a.span_ns) and h2d_us * 1e3 >= PIN_PAYS * a.span_ns


def attends(a: Analysis) -> bool:
    """The span runs attention that may compute padded positions: an attention op or kernel among its costed points,
    hotspots or top kernels, or the hand-written attention the sdpa lever finds (softmax between two GEMMs), and its
    attention takes a mask (model.attention_masks: a ViT's fixed patches pad nothing; fresh12 dinov2 was offered
    masking advice written for a text model's batches)."""
    names = [h.name for h in a.hotspots] + [k.name for k in a.top_kernels]
    runs = (any(p.kind == "attention" for p in a.roof.points) or any(map(is_attention, names))
            or any(c.lever == SDPA and c.assumption is not None and c.assumption.count > 0 for c in a.lever_choices))
    return runs and attention_masked(a.trace)


def replayed_from_graphs(a: Analysis) -> bool:
    """Most of the trace's GPU activities replay from CUDA graphs captured outside it (the graph-replay caveat)."""
    return any(c.kind in GRAPH_UNJOINED_KINDS and c.count >= 0.5 * max(a.kernels, 1) for c in a.trace.caveats)


def matrix_precision(a: Analysis) -> str | None:
    """The precision holding most of the top kernels' GEMM/convolution time, by the kernels' names (None: none
    says)."""
    by: dict[str, float] = {}
    for k in a.top_kernels:
        p = matrix_precision_by_name(k.name)
        if p is not None:
            by[p] = by.get(p, 0.0) + k.device_us
    return max(by, key=by.__getitem__) if by else None


def trains(a: Analysis) -> bool:
    """The trace runs a training step: autograd's backward or an optimizer step among its constructs."""
    fw = a.framework
    return fw is not None and any(fw.share_of(c) is not None for c in (Construct.OPTIMIZER, Construct.BACKWARD))


def training_loop(a: Analysis) -> bool:
    """The trace is a training loop over a DataLoader (whose batch_size the user sets): its batches' __next__, and an
    optimizer step or autograd's backward, among its constructs."""
    fw = a.framework
    return fw is not None and fw.share_of(Construct.DATALOADER) is not None \
        and any(fw.share_of(c) is not None for c in (Construct.OPTIMIZER, Construct.BACKWARD))
