"""A first batch is not a steady state, a busy GPU needs no CUDA graphs, autocast's casts counted, a rate no memory
is that slow (heldout-user8: public traces of other projects, not committed). Each pattern on a small synthetic
trace that shows it, with the negative where the rule must not fire; where the old sentence comes back, the claim
checker catches it."""
import copy
import dataclasses

from claim_traces import dataloader_with_workers, runtime_only
from kineto_factory import Launch, annotation, call, document, events_for, write
from other_peoples_traces import MS, US, steady, with_device
from tracetriage.analyzers.analyses.slow_rates import SLOWEST_GPU_GBPS, below_any_gpu
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.report import five_lines
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import CUDA_GRAPHS, DATALOADER_WORKERS
from tracetriage.analyzers.whatif.levers.autocast_bf16 import says as autocast_says


def _report(tmp_path, name, doc):
    a = analyze_file(write(tmp_path / f"{name}.json", doc))
    return a, five_lines(a), serialize.report(a)


# --- the traces ------------------------------------------------------------------------------------------------

def queued_long_kernels(n: int = 24, kernel_ns: int = 191 * US, mallocs: int = 7) -> dict:
    """One cold forward of a small CNN on a 2080 Ti (heldout-user8 rtx2080ti_cnn_fwd1): the caching allocator's
    cudaMalloc calls (300 µs each) before the first kernel, then n kernels of 191 µs launched 20 µs apart, each
    queued long before the one before it ends: back to back, 1 µs apart. No shapes recorded."""
    ev = [call("cudaMalloc", 100 * US + i * 310 * US, 400 * US + i * 310 * US) for i in range(mallocs)]
    t0 = 200 * US + mallocs * 310 * US
    launches, g = [], t0 + 30 * US
    for i in range(n):
        cs = t0 + i * 20 * US
        launches.append(Launch(op_start=cs - 2 * US, op_end=cs + 18 * US, call_start=cs, call_end=cs + 17 * US,
                               gpu_start=max(g, cs + 20 * US), gpu_end=max(g, cs + 20 * US) + kernel_ns,
                               op="aten::cudnn_convolution", kernel=f"void conv{i % 3}<float>(float*)"))
        g = launches[-1].gpu_end + 1 * US
    return document(ev + events_for(launches))


def one_first_batch(wait_ns: int = 800 * MS) -> dict:
    """One iteration of a notebook's `for x in loader` with 16 workers (heldout-user8 a5000_vit224_first_batch): the
    only DataLoader __next__ of the trace waits 800 ms (the workers start, each makes its first batch), then the
    step launches 40 kernels of 100 µs, 3 µs apart."""
    nxt = annotation("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 1 * MS, 1 * MS + wait_ns)
    return document([nxt] + events_for(steady(40, 2 * MS + wait_ns, kernel_ns=100 * US, gap=3 * US, call_ns=1 * US)))


def linears_without_shapes(layers: int = 6, ops: bool = True) -> dict:
    """A forward of `layers` nn.Linear in fp32 on an H200, record_shapes off: each aten::linear launches one
    ampere_sgemm kernel. With ops=False only the runtime was recorded (no cpu_op)."""
    launches = [dataclasses.replace(x, op="aten::linear")
                for x in steady(layers, 100 * US, kernel="ampere_sgemm_128x64_tn", kernel_ns=200 * US)]
    ev = events_for(launches)
    for e in ev:
        if e.get("cat") == "cpu_op":
            e["args"] = {"External id": e["args"]["External id"]}      # record_shapes off
    if not ops:
        ev = [e for e in ev if e.get("cat") != "cpu_op"]
    return document(ev)


# --- a busy GPU needs no CUDA graphs ---------------------------------------------------------------------------

def test_kernels_queued_back_to_back_are_no_launch_overhead_to_cut(tmp_path):
    """Was: "cut launches: capture the step in CUDA graphs ... (predicted −18%), because the GPU idles 3% between 24
    kernels that run 191.0 µs (median), in 23 gaps (median 1.0 µs) where the queue ran dry": the queue never ran dry
    (every kernel was launched long before the one before it ended), and the −18% was the allocator's cudaMalloc
    before the first kernel."""
    a, lines, out = _report(tmp_path, "queued", queued_long_kernels())
    ev = a.evidence[Cause.LAUNCH_OVERHEAD]
    assert ev.queued_gaps == ev.gaps == 23
    assert a.pace.dry.dry_gaps == 0 and a.pace.dry.fills_little
    assert a.next_experiment.lever is None or a.next_experiment.lever.lever != CUDA_GRAPHS
    assert "CUDA graphs" not in lines[4].split("Would waste the week")[0] and "queue ran dry" not in lines[4]
    assert "in every one the next kernel was queued already (the device's own spacing: the host kept ahead)" in lines[2]
    assert claims.check(out) == []


def test_gaps_where_the_host_fell_behind_still_read_as_launch_overhead(tmp_path):
    """The negative: kernels launched as the previous one ends (the queue runs dry in every gap) keep the launch
    verdict and its clause-free Idle line."""
    a, lines, out = _report(tmp_path, "dry", document(events_for(steady(40, 100 * US))))
    ev = a.evidence[Cause.LAUNCH_OVERHEAD]
    assert ev.gaps and ev.queued_gaps == 0 and a.pace.dry.dry_gaps == ev.gaps and not a.pace.dry.fills_little
    assert "queued already" not in lines[2]
    assert a.next_experiment.lever is not None and a.next_experiment.lever.lever == CUDA_GRAPHS
    assert claims.check(out) == []


def test_the_checker_catches_a_dry_queue_because_on_a_full_queue(tmp_path):
    _, _, out = _report(tmp_path, "queued", queued_long_kernels())
    old = copy.deepcopy(out)
    old["claims"] += [{"key": "next.because.gaps", "value": 23.0, "said": "23 gaps"},
                      {"key": "next.because.kernel_median_us", "value": 191.0, "said": "191.0 µs"}]
    old["lines"][4] = old["lines"][4] + " 23 gaps 191.0 µs"
    assert any("queue ran dry in 23 gaps, but in 23 of them" in p for p in claims.check(old))
    # ... and one that counts its dry gaps, where they hold under 3% of the span
    old["claims"] += [{"key": "next.because.dry_gaps", "value": 1.0, "said": "1"},
                      {"key": "next.because.dry_us", "value": 50.0, "said": "50.0 µs"}]
    old["lines"][4] += " 1 50.0 µs"
    assert any("where the queue ran dry in 1 gaps holding 50 µs, under 3% of the span" in p
               for p in claims.check(old))


def test_a_gpu_its_kernels_fill_is_gpu_bound_without_shapes(tmp_path):
    """Was: "Regime: unknown: ... no cost model because no shapes recorded; nothing else to decide by" on a
    99.7%-busy ResNet-50 forward: GPU-bound is decidable without a cost model."""
    _, lines, out = _report(tmp_path, "queued", queued_long_kernels())
    assert lines[3].startswith("Regime: unknown:") and "so the span is GPU-bound" in lines[3]
    assert "nothing else to decide by" not in lines[3]
    assert claims.check(out) == []


def test_an_idle_gpu_without_shapes_is_not_called_gpu_bound(tmp_path):
    _, lines, _ = _report(tmp_path, "dry", document(events_for(steady(40, 100 * US))))
    assert "GPU-bound" not in lines[3]


# --- a first batch is not a steady state -----------------------------------------------------------------------

def test_the_only_batch_of_a_trace_is_read_as_the_workers_start_up(tmp_path):
    """Was: "make the DataLoader's workers keep up ... lighten the per-sample transform ... raise num_workers ...
    because the GPU idles 9% of the span while the host runs code" on a trace whose one 780 ms __next__ beside a
    22.9 ms GPU span is a first batch, and "mostly data transfer" on an Idle line blind to the 2.7 s window."""
    a, lines, out = _report(tmp_path, "first_batch", one_first_batch())
    lv = a.next_experiment.lever
    assert lv.lever == DATALOADER_WORKERS and lv.assumption.lone and lv.assumption.start_up
    assert "persistent_workers=True" in lines[4] and "profile a later batch" in lines[4]
    assert "raise num_workers" not in lines[4]
    # the because cites the wait the prediction rests on, and the prediction is no more than it
    assert "because the loop waited 800.0 ms inside _MultiProcessingDataLoaderIter.__next__ for the trace's only " \
           "batch" in lines[4]
    assert lv.saving_ns <= 800 * MS
    # the Idle and Regime lines say what the window outside the GPU span holds
    assert "outside the GPU span the traced window holds" in lines[2] and "800.0 ms of it inside the DataLoader" \
        in lines[2]
    assert "the traced window is host-bound" in lines[3]
    assert claims.check(out) == []


def test_a_loop_of_batches_is_no_lone_batch_and_its_window_is_its_span(tmp_path):
    """The negative: eight 5 ms waits, one a step, are workers falling behind in a window the GPU span fills."""
    a, lines, _ = _report(tmp_path, "loop", dataloader_with_workers())
    lv = a.next_experiment.lever
    assert lv is None or not getattr(lv.assumption, "lone", False)
    assert "only batch" not in lines[4] and "outside the GPU span" not in lines[2]
    assert a.pace.window is None


def test_the_checker_catches_a_window_busy_share_off_its_fields(tmp_path):
    _, _, out = _report(tmp_path, "first_batch", one_first_batch())
    old = copy.deepcopy(out)
    for c in old["claims"]:
        if c["key"] == "idle.window.busy_share":
            c["value"] *= 10
    assert any("kernels are busy" in p and "of the traced window" in p for p in claims.check(old))


def test_the_checker_catches_pinning_recommended_beside_its_zero(tmp_path):
    _, _, out = _report(tmp_path, "first_batch", one_first_batch())
    old = copy.deepcopy(out)
    old["lines"][4] = ("Next: make the DataLoader's workers keep up ... and pin_memory=True with .to(device, "
                       "non_blocking=True), because ...; data transfer holds more of the idle, but pinned memory and "
                       "async copies predicts no saving (0%).")
    assert any("recommends pin_memory=True" in p for p in claims.check(old))


# --- autocast's casts ------------------------------------------------------------------------------------------

def test_autocast_counts_a_weight_cast_per_layer_without_shapes(tmp_path):
    """Was: "after 0 casts that add 58.0 µs of host time" (the dispatch of the ops, the casts uncounted without
    shapes): each nn.Linear's weight is cast every forward, and the first one's fp32 input too."""
    t = load(write(tmp_path / "linears.json", linears_without_shapes(6)))
    a = whatif.predict(t, ["autocast_bf16"]).levers[0].assumption
    assert a.count == 6 and a.listed_ops == 6
    assert a.casts == 7 and a.unsized == 7 and a.host_ns > 0
    said = autocast_says(a)
    assert "after 7 casts (7 counted from their ops' names" in said and "0 casts" not in said


def test_autocast_says_its_casts_are_not_counted_without_ops(tmp_path):
    """A runtime-only capture records no op of autocast's lists: its casts are not counted, never "0 casts"."""
    t = load(write(tmp_path / "linears.json", linears_without_shapes(6, ops=False)))
    a = whatif.predict(t, ["autocast_bf16"]).levers[0].assumption
    assert a.count == 6 and a.listed_ops == 0 and a.casts == 0
    said = autocast_says(a)
    assert "its casts not counted" in said and "0 casts" not in said


# --- a rate no memory is that slow -----------------------------------------------------------------------------

def test_a_rate_below_any_gpus_memory_is_flagged_only_where_the_device_is_unknown():
    """An RTX 500 Ada laptop GPU's memory-bound ops at 5.37 GB/s (no peak table entry) were said memory-bound as if
    that were its memory's limit."""
    assert below_any_gpu(5.37, None)
    assert not below_any_gpu(SLOWEST_GPU_GBPS * 2, None)
    assert not below_any_gpu(0.0, None)                   # no rate: nothing to flag
    assert not below_any_gpu(5.37, object())              # peaks known: the roofline's latency verdict decides


def test_runtime_only_traces_keep_their_reports_checked(tmp_path):
    """The window and queue rules on a runtime-only capture (no op, no DataLoader range) add nothing false."""
    _, _, out = _report(tmp_path, "rt", runtime_only())
    assert claims.check(out) == []


def test_with_device_keeps_the_busy_gpu_rule_on_other_cards(tmp_path):
    _, lines, _ = _report(tmp_path, "q2080", with_device(queued_long_kernels(), "GeForce RTX 2080 Ti"))
    assert "CUDA graphs" not in lines[4].split("Would waste the week")[0]
