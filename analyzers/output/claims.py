"""The claim checker: do a report's sentences agree with each other and with the analysis under them?

    problems = claims.check(serialize.report(analysis))    # [] when every claim holds

`output.invariants` checks that time adds up; this module checks what the sentences *claim* (issue 33). The
sentence builders record each figure they state as a claim (tracetriage.analyzers.voice.said: `report --json`'s
"claims", each a key, the field's value and the text said), and the relations are verified on those values, not
on the words:

0. each claim is said on its line, each percentage of the Idle line's split and of the Next line is a claim, and a
   claim is its field: the Idle line's split is each cause's share of the span, the Next's saving its lever's
   ratio, the idle share its because gives the Idle line's, the share of its own cause the cause's (a host-work
   because gives the host work's share, not the whole idle's);
1. a Next's because agrees with its prediction: no because that rests on nothing (a figure of 0, or one said as
   0: "0 times the device drained", "0% of the span is set-up"), no saving beyond the time its lever's edit takes
   out where the lever states that bound (keep_allocator_cache: the calls' host time, drains included), a
   warm-up's saving the set-up share its because gives (one figure, within a point; where the
   device idles through torch.compile's first compilations, neither the set-up nor the saving below their share), a
   launch-bound because only where kernels are shorter than a launch, a loop's fix after a warm-up saving no more
   than the span the warm-up leaves, and counting as launches to cut only the
   kernels launched outside the CUDA graphs a trace replays;
2. no Next predicted to save 0% or to slow the run, and a "would waste the week" lever that saves no more than
   the Next, is never phrased as a saving when the replay predicts it slows the run, and is not CUDA graphs on a
   trace that replays graphs already; no "its biggest gaps do not recur" where the steady steps idle a quarter of each,
   and no idle cause's Next where the first of three steps or more holds nearly all of that cause's idle (a cold
   start); no "torch.compile to fuse" for code compiled already, nor where the what-if's
   fuse lever finds no eager chain to fuse;
3. a verdict the health check withholds is given nowhere (no shapes: no compute/memory split; no what-if: no
   prediction), and what the kernels' names decide without shapes is not withheld (fp32 GEMMs/convolutions on CUDA
   cores holding most of the kernel time: not "nothing else to decide by", no find-the-bound Next where the device
   runs a half precision faster on tensor cores, no lever's Next saving less than those kernels at half their
   time give back), its share the field's;
4. a device capability named in advice exists on the device (fp8 tensor cores only where the peaks have an fp8
   rate above fp16's, TF32 and bf16 only where they beat fp32), a precision named as cheaper arithmetic is cheaper
   than the one the top GEMMs' names say they run, and the workers asked of a DataLoader are not
   already there (_MultiProcessingDataLoaderIter);
5. prefill/decode phases (TTFT, per token) only with a decode of more than one step after its prefill, and a
   TTFT longer than the GPU span says that host time before the first kernel is counted;
6. one peak per trace: every peak a line judges against is the peaks' own, and no line states an achieved rate
   above the peak it states (a measured ceiling a kernel passes is raised: DevicePeaks.judged_by), nor a datasheet
   peak passed as a fact (a rate above the sheet is the cache or the timer, said with its margin);
7. no number rounded to nothing stated as a fact ("0 FLOP/byte", "0 GB/s", "0 TFLOP/s");
8. an idle-bound span is "overhead-bound" only where launches and dispatch are what it waits on: a cold start (the
   Next warms up or profiles the replays) is set-up-bound, with the set-up share its Next's because gives, unless
   the steady steps after it idle most of their time or the Idle line's dominant cause is launch overhead (then
   the Regime names the loop's bound, the cold start a lead-in: no Regime says "not launch overhead" beside an
   Idle line whose dominant cause is launch overhead), and a
   device whose idle is mostly inside the DataLoader input-bound, with the DataLoader's share of the idle, one
   whose idle is mostly torch.compile compiling compile-bound, one whose idle is mostly copies (the Idle
   line's dominant cause) transfer-bound, and one whose idle is mostly host work that is not one-time set-up (the
   Idle line's dominant cause, launch overhead under half of it) host-bound, each with that share;
9. an outlier step said to have "kernels ran longer" has its own kernel time (the work queued before the profiled
   window left out) above the median step's by most of its extra time, and one said to have run queued work ran
   that much of it: both read from the per-step columns, not from the outlier's own fields;
10. a copies Next's because ("compute idles X while copies run") gives the data-transfer share, not the whole idle;
11. a Next whose lever changes no kernel (it moves launches, syncs, host work, set-up, batches) predicts a span no
    shorter than the GPU's own work in it: the kernels' busy time it keeps (where they ran one at a time).
12. data transfer is copies over the link: no device-to-device copy or memset is a copy the idle waits on (they are
    device work, counted busy), and the idle's data transfer is no longer than the idle;
13. each sync call is counted once: the calls named after the drains add up to no more than the drains (a call
    whose recovery gaps were charged to it is one drain, not one per gap);
14. removing syncs overlaps host work with GPU work: the overlap a line claims is no longer than the device's work
    (kernels, device copies and memsets, and copies over the link);
15. a compute- or memory-bound verdict that rests on kernels' names (no FLOPs or bytes of its own) states no
    intensity against a ridge: that average is other ops';
16. a Next asks for pinned memory only where the host-to-device copies it would speed hold 1% of the span;
17. a launch-bound because ("where the queue ran dry") only where the queue did run dry: not where most launch gaps
    had their next kernel queued already behind kernels that outlast a launch call (the device's own spacing);
18. no line recommends a fix it says in the same breath saves nothing ("pin_memory=True ... but pinned memory and
    async copies predicts no saving (0%)");
19. a DataLoader because that cites the loop's wait in __next__ saves no more than that wait; a traced window said
    around the GPU span is longer than the span, and the kernels' busy share of it is the report's busy time over
    it (Idle and Regime lines alike);
20. a Next overlaps copies with compute only where some kernel runs;
21. no line asks for a bigger batch where the Next is a loop over items (launches grow with the batch);
22. what a report counts adds up (tracetriage.analyzers.output.claims_counts): steps x step time fit the span;
23. set-up and steps (tracetriage.analyzers.output.claims_setup): the Caveat's set-up share is a warm-up Next's
    saving, no counted step is a fragment the profiler cut, the steady median holds no step kept apart, and a
    Next's remainder that still holds the cold start the Regime line names says so.

A rank's own fix beside the straggler (claims under "next.own") is held to 1 and 2 as a Next of its own. In a
multi-rank output each rank's wait for a peer is the run's (against the fastest rank's same call).
`check_ranks`, `check_whatif` and `check_diff` do the same for the other outputs. It reads only the JSON
contract (docs/json.md), like the invariants, so it checks what a user gets. The relations are each a
function named after what they verify: below, or in a claims_* module of one subject (claims_next: 1 and 2,
claims_regime: 3 to 5, claims_idle_bound: 8; claims_said: the claims by key they all read).
"""
from __future__ import annotations

import re
import statistics

from tracetriage.analyzers.model.units import gbps, tflops
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.output.claims_counts import count_relations
from tracetriage.analyzers.output.claims_idle import within_the_idle
from tracetriage.analyzers.output.claims_idle_bound import idle_bound_says_what_it_waits_on
from tracetriage.analyzers.output.claims_next import (
    because_rests_on_something,
    idle_next_recurs,
    launch_because_counts_only_eager_launches,
    launch_because_has_short_kernels,
    loop_fix_within_the_warm_up,
    next_saves_something,
    no_compile_for_compiled,
    no_graphs_for_graphs,
    saving_within_what_it_removes,
    warm_up_holds_the_first_compilations,
    warm_up_saves_at_most_its_set_up,
    waste_agrees_with_the_steady_steps,
    waste_saves_least,
)
from tracetriage.analyzers.output.claims_regime import (
    device_can_take_the_advice,
    kernel_names_decide_the_arithmetic,
    phases_only_where_they_change,
    withheld_verdicts_not_given,
)
from tracetriage.analyzers.output.claims_said import (
    CAUSE_OF_KIND,
    FLOOR_TOLERANCE,
    NEXTS,
    SAID_ZERO,
    SHARE_TOLERANCE,
    Said,
    line_of,
    said_of,
)
from tracetriage.analyzers.output.claims_setup import setup_relations
from tracetriage.analyzers.output.claims_transfers import transfer_relations
from tracetriage.analyzers.output.healthy_claims import no_lever_only_where_the_profiler_holds_the_saving
from tracetriage.analyzers.output.next_line_claims import (
    no_bigger_batch_where_launches_scale_with_it,
    no_compute_to_overlap_without_kernels,
    no_fix_recommended_beside_its_zero,
)
from tracetriage.analyzers.triage.launch_queue import DRY_FLOOR
from tracetriage.analyzers.voice.roof import AT_THE_ROOF, ROOF_IDLE

_PERCENT = re.compile(r"(?<![\w.,])[−+]?(?:<1|\d[\d,]*(?:\.\d+)?)%")
_ROUNDED_TO_NOTHING = re.compile(r"(?<![\d.,])0 (FLOP/byte|GB/s|TFLOP/s)")



def check(out: dict) -> list[str]:
    """The claims a report breaks, in words (empty: none)."""
    if "ranks" in out:
        return check_ranks(out)
    lines = out.get("lines") or []
    if len(lines) < 5:
        return []
    said = said_of(out)
    return (_said_on_their_lines(said, lines) + _numbers_are_claims(said, lines) + _claims_are_fields(said, out)
            + [p for nx in NEXTS for p in because_rests_on_something(said, nx)
               + warm_up_saves_at_most_its_set_up(said, nx) + launch_because_has_short_kernels(said, nx)
               + next_saves_something(said, nx) + saving_within_what_it_removes(said, nx)]
            + waste_saves_least(said, lines) + waste_agrees_with_the_steady_steps(said, out) + idle_next_recurs(out)
            + loop_fix_within_the_warm_up(said, out)
            + no_graphs_for_graphs(said, out) + no_compile_for_compiled(said, out)
            + withheld_verdicts_not_given(said, out) + kernel_names_decide_the_arithmetic(said, out, lines)
            + device_can_take_the_advice(said, out) + phases_only_where_they_change(said, out)
            + _one_peak(said, out) + _no_number_rounded_to_nothing(lines) + _no_claim_rounded_to_nothing(said)
            + idle_bound_says_what_it_waits_on(said, out, lines)
            + launch_because_counts_only_eager_launches(said, out) + warm_up_holds_the_first_compilations(said, out)
            + _outlier_is_what_its_steps_show(said, out)
            + transfer_relations(said, out, lines) + _sync_calls_counted_once(out)
            + _overlap_at_most_the_gpu_work(said, out) + _no_intensity_beside_a_verdict_by_names(said, out)
            + within_the_idle(said, out) + no_lever_only_where_the_profiler_holds_the_saving(said)
            + _kernel_keeping_next_above_its_gpu_work(out)
            + _no_lever_only_at_the_roof(said, out)
            + _dry_queue_because_has_a_dry_queue(said, out) + no_fix_recommended_beside_its_zero(out, lines)
            + _loader_saving_within_its_wait(said) + _window_busy_is_the_reports(said, out)
            + no_compute_to_overlap_without_kernels(out, lines)
            + no_bigger_batch_where_launches_scale_with_it(out, lines) + count_relations(said, out, lines)
            + setup_relations(said, out))


def _no_lever_only_at_the_roof(said: Said, out: dict) -> list[str]:
    """"No one-line lever" is said only of a step whose compute-bound kernels reach the roof and whose GPU idles
    little: the reach it states is at least AT_THE_ROOF, the idle it states is the report's and under ROOF_IDLE."""
    reach, idle = said.value("next.roof.reach"), said.value("next.roof.idle_share")
    if reach is None:
        return []
    bad = []
    if reach < AT_THE_ROOF:
        bad.append(f"no one-line lever is said at {100 * reach:.0f}% of the compute roof, under {AT_THE_ROOF:.0%}")
    # the idle a host-side fix could reach, where it is said, is within the idle and small
    reachable = said.value("next.roof.reachable_share")
    small = idle is not None and (idle < ROOF_IDLE or (reachable is not None and reachable <= idle + SHARE_TOLERANCE
                                                         and reachable < ROOF_IDLE))
    if idle is None or abs(idle - (out.get("idle_share") or 0.0)) > SHARE_TOLERANCE or not small:
        bad.append("no one-line lever is said beside an idle share that is not the report's, or not small")
    return bad


def _loader_saving_within_its_wait(said: Said) -> list[str]:
    """A Next whose because cites the loop's wait inside the DataLoader's __next__ saves no more than that wait."""
    wait, saving, base = (said.value("next.because.dataloader_wait_us"), said.value("next.saving"),
                          said.value("next.baseline_us"))
    if wait is None or saving is None or not base or saving * base <= wait * (1 + FLOOR_TOLERANCE) + 1.0:
        return []
    return [f"the Next saves {said.get('next.saving')['said']} ({saving * base / 1000:.1f} ms), more than the "
            f"{wait / 1000:.1f} ms its because says the loop waited for the DataLoader"]


def _window_busy_is_the_reports(said: Said, out: dict) -> list[str]:
    """The traced window said around the GPU span outlasts the span, and the kernels are busy the report's busy time
    of it (the Idle line's clause and the Regime line's, each against the fields)."""
    bad = []
    busy, span = out.get("kernel_busy_us") or 0.0, out.get("span_us") or 0.0
    for line in ("idle", "regime"):
        traced, share = said.value(f"{line}.window.traced_us"), said.value(f"{line}.window.busy_share")
        if traced is None or share is None:
            continue
        if traced < span:
            bad.append(f"the {line.capitalize()} line's traced window ({traced / 1000:.1f} ms) is shorter than the "
                       f"GPU span ({span / 1000:.1f} ms)")
        elif abs(share - busy / traced) > SHARE_TOLERANCE:
            bad.append(f"the {line.capitalize()} line says kernels are busy {100 * share:.2f}% of the traced window, "
                       f"the report's busy time gives {100 * busy / traced:.2f}%")
    return bad


def _dry_queue_because_has_a_dry_queue(said: Said, out: dict) -> list[str]:
    """A launch-bound because that says the queue ran dry (its gaps claimed: next.because.gaps) counts as dry only
    the gaps where it did (not those whose next kernel was queued already: the device's own spacing), and those hold
    launch_queue.DRY_FLOOR of the span: less, and no launch cut is the experiment (a 97%-busy RTX 2080 Ti, 22 of 23
    gaps of 1 µs queued, was told CUDA graphs "where the queue ran dry")."""
    gaps = said.value("next.because.gaps")
    if gaps is None or said.get("next.because.kernel_median_us") is None:
        return []
    ev = ((out.get("idle") or {}).get("evidence") or {}).get("launch_overhead") or {}
    queued = ev.get("queued_gaps", 0)
    dry, dry_us, span = said.value("next.because.dry_gaps"), said.value("next.because.dry_us"), out.get("span_us")
    if queued and dry is None:
        return [f"the Next says the queue ran dry in {gaps:g} gaps, but in {queued} of them the next kernel was queued "
                "already"]
    if dry is not None and dry_us is not None and span and dry_us < DRY_FLOOR * span:
        return [f"the Next cuts launches where the queue ran dry in {dry:g} gaps holding {dry_us:g} µs, under "
                f"{100 * DRY_FLOOR:.0f}% of the span"]
    return []


# Levers that change no GPU activity's time: they move launches, syncs, host stretches, set-up or the input
# pipeline. The replay keeps each stream's work in order, so their predicted span holds the GPU's busy time.
# (no_recompiles is not one: a recompile's autotuning runs benchmark kernels, which go with it: fresh3
# compile_recompile-before.)
# batch_items is priced as the launches cut (cuda_graphs' replay), its kernels as they ran; batch_passes takes the later
# passes' host work away and keeps their kernels.
KERNEL_KEEPING = ("cuda_graphs", "remove_syncs", "no_host_work", "warm_up", "dataloader_workers", "batch_items",
                  "batch_passes")


def _kernel_keeping_next_above_its_gpu_work(out: dict) -> list[str]:
    """A Next that changes no kernel cannot predict the span below the GPU work it keeps (fresh4
    gpt2_manual_attention-after: CUDA graphs sold past the ~25% the GPU's own work leaves)."""
    nx = out.get("next_experiment") or {}
    lever, ratio, base = nx.get("whatif_lever"), nx.get("predicted_ratio"), nx.get("baseline_us")
    if lever not in KERNEL_KEEPING or ratio is None or not base:
        return []
    gpu = out.get("kernel_busy_us") or 0.0      # the kernels alone: copies may run beside them
    d = out.get("regime_detail") or {}
    summed = sum(d.get(k, 0.0) for k in ("compute_us", "memory_us", "unknown_us", "latency_us", "comm_us"))
    if summed > (1 + FLOOR_TOLERANCE) * gpu:
        return []   # kernels ran beside each other on several streams: a replay may overlap them further
                    # (deepseek-h800-train: collectives beside compute, no_host_work 2.7% under the union busy)
    if base * ratio < (1 - FLOOR_TOLERANCE) * gpu:
        return [f"the Next ({lever}) changes no kernel but predicts {base * ratio / 1000:.1f} ms, below the "
                f"{gpu / 1000:.1f} ms of GPU work it keeps"]
    return []


def _no_intensity_beside_a_verdict_by_names(said: Said, out: dict) -> list[str]:
    """A compute-bound verdict with no achieved FLOP/s (or a memory-bound one with no GB/s) rests on kernel names:
    an intensity beside it is the costed ops', which the verdict is not about (fresh4 mlp_gemm_roof-after:
    'compute-bound ... its ops average 0.2 FLOP/byte against a fp32 ridge of 20' for bf16 GEMMs)."""
    d = out.get("regime_detail") or {}
    names_only = ((out.get("regime") == "compute" and d.get("achieved_tflops") is None)
                  or (out.get("regime") == "memory" and d.get("achieved_gbps") is None))
    c = said.get("regime.intensity")
    if names_only and c is not None:
        return [f"the Regime line says {out.get('regime')}-bound by kernel names and states an intensity of "
                f"{c['said']} FLOP/byte, the costed ops'"]
    return []


_OVERLAP_KEYS = ("idle.syncs.overlap_us", "next.because.overlap_us", "next.own.because.overlap_us")


def _overlap_at_most_the_gpu_work(said: Said, out: dict) -> list[str]:
    """An overlap cannot exceed the GPU work it overlaps with (heldout-user3 cs521_induction_a10g: 'the syncs
    serialise the host with the GPU: removing them overlaps 2.64 s' where the device's work was 62 µs)."""
    work = (out.get("kernel_busy_us") or 0.0) + (out.get("copy_us") or 0.0)
    return [f"the {key} claim says removing the syncs overlaps {c['said']}, longer than the GPU's work "
            f"({work:.1f} µs)" for key in _OVERLAP_KEYS if (c := said.get(key)) is not None
            and c["value"] > work * 1.01 + 1.0]


def _sync_calls_counted_once(out: dict) -> list[str]:
    """The sync calls the Idle line names (×N) are calls, each counted once, never more than the drains (fresh4
    preprocess_compiled_roof-before: one cudaDeviceSynchronize said 'x7', once per gap of its recovery)."""
    ev = (out.get("idle", {}).get("evidence") or {}).get(Cause.SYNCHRONIZATION.value) or {}
    named = sum(c.get("count", 0) for c in ev.get("sync_calls") or [])
    drains = ev.get("drains")
    if drains is None or named <= drains:
        return []
    return [f"the syncs are named {named} times after {drains} drains: a call counted once per gap"]


def check_ranks(out: dict) -> list[str]:
    """Each rank's report, its wait for a peer the run's, and the ranks' own lines: no number rounded to nothing."""
    bad = [f"rank {r.get('trace', {}).get('rank')}: {p}" for r in out["ranks"] for p in check(r)]
    return bad + _waits_are_the_runs(out) + _no_number_rounded_to_nothing(out.get("lines") or [])


def _waits_are_the_runs(out: dict) -> list[str]:
    """Where every rank's calls are matched (a peer wait per rank), each rank's own report splits its collectives
    against the fastest rank's same call, as the ranks' lines do: no rank is said to wait for a peer longer than the
    run says it did (the rank that arrived last at a call waits for nobody in it)."""
    bad = []
    for r in out["ranks"]:
        peer = (r.get("collectives") or {}).get("peer_wait_us")
        comm = (r.get("regime_detail") or {}).get("communication")
        if peer is None or not comm:
            continue
        if not comm.get("against_peers"):
            bad.append(f"rank {r['rank']}: its report measures its wait against its own calls, not the run's")
        elif comm["wait_ns"] / 1e3 > peer + max(1.0, 0.01 * peer):
            bad.append(f"rank {r['rank']}: its report says {comm['wait_ns'] / 1e3:,.1f} µs waiting for a peer, the "
                       f"run {peer:,.1f} µs")
    return bad


def check_whatif(out: dict) -> list[str]:
    """A what-if: each lever's saving is its baseline less its prediction, and the levers are in order."""
    bad = []
    base = out.get("baseline_us")
    levers = out.get("levers") or []
    for lv in levers:
        if base and abs(base - lv["predicted_us"] - lv["saving_us"]) > 0.01 * max(base, 1.0):
            bad.append(f"lever {lv['lever']}: saving {lv['saving_us']} µs is not {base} − {lv['predicted_us']}")
    if [lv["predicted_us"] for lv in levers] != sorted(lv["predicted_us"] for lv in levers):
        bad.append("the levers are not in the order of their predicted span")
    return bad


def check_diff(out: dict) -> list[str]:
    """A diff's sentences: no number rounded to nothing stated as a fact."""
    return _no_number_rounded_to_nothing(out.get("lines") or [])


# --- 0. every claim is said, every figure of the relations is a claim, and a claim is its field ---------------

def _said_on_their_lines(said: Said, lines: list[str]) -> list[str]:
    return [f"the {c['key']} claim says {c['said']!r}, which its line does not" for c in said.all
            if c["said"] and c["said"] not in lines[line_of(c["key"])]]


def _numbers_are_claims(said: Said, lines: list[str]) -> list[str]:
    """Every percentage of the Idle line's split and of the Next line is a claim of that line: no figure there
    comes from anywhere but a field."""
    bad = []
    split = lines[2].split(":", 2)[-1].split(";")[0] if lines[2].startswith("Idle: the GPU is idle") else ""
    for line, text in ((2, split), (4, lines[4])):
        mine = {c["said"] for c in said.all if c["said"] and line_of(c["key"]) == line}
        for m in _PERCENT.finditer(text):
            if not any(m.group(0) in s for s in mine):
                bad.append(f"{m.group(0)} on the {'Idle' if line == 2 else 'Next'} line is no claim of a field")
    return bad


def _claims_are_fields(said: Said, out: dict) -> list[str]:
    """The Idle line's split is each cause's idle over the span, the idle share the report's, the Next's saving its
    lever's ratio, and the idle share its because gives the Idle line's (within a point: they round separately)."""
    bad = []
    span = out.get("span_us") or 0
    for c in said.under("idle.cause."):
        field = out["idle"]["by_cause_us"].get(c["key"].rsplit(".", 1)[1], 0.0) / span if span else 0.0
        if abs(field - c["value"]) > SHARE_TOLERANCE:
            bad.append(f"the Idle line says {c['key'].rsplit('.', 1)[1]} {c['said']}, its field is {100 * field:.1f}%")
    idle = said.value("idle.share")
    if idle is not None and abs(idle - (out.get("idle_share") or 0.0)) > SHARE_TOLERANCE:
        bad.append(f"the Idle line's share {100 * idle:.1f}% is not the report's {100 * out['idle_share']:.1f}%")
    for nx in NEXTS:
        because = said.value(f"{nx}.because.idle_share")
        if because is not None and span and abs(because - out["idle_us"] / span) > SHARE_TOLERANCE:
            bad.append(f"the Next's because says the GPU idles {said.get(f'{nx}.because.idle_share')['said']}, the "
                       f"Idle line's share is {100 * out['idle_us'] / span:.1f}%")
    nx = out.get("next_experiment") or {}
    for key, kind in (("next", nx.get("kind")), ("next.own", (nx.get("own_fix") or {}).get("kind"))):
        c, cause = said.get(f"{key}.because.cause_share"), CAUSE_OF_KIND.get(kind or "")
        whole = said.get(f"{key}.because.idle_share")
        held = out["idle"]["by_cause_us"].get(cause, 0.0) if cause else 0.0
        if whole is not None and c is None and cause and 2 * held < out["idle_us"]:
            bad.append(f"the Next's because gives its {cause} fix the whole idle ({whole['said']}), which that cause "
                       "holds under half of, and never says its share")
        field = out["idle"]["by_cause_us"].get(cause, 0.0) / span if span and cause else None
        if c is not None and field is not None and abs(field - c["value"]) > SHARE_TOLERANCE:
            bad.append(f"the Next's because gives {cause} {c['said']} of the span, the Idle line's field is "
                       f"{100 * field:.1f}%")
    for key, ratio in (("next.saving", nx.get("predicted_ratio")),
                       ("next.own.saving", (nx.get("own_fix") or {}).get("predicted_ratio"))):
        saving = said.value(key)
        if saving is not None and ratio is not None and abs((1 - ratio) - saving) > SHARE_TOLERANCE:
            bad.append(f"the {'Next' if key == 'next.saving' else 'rank own fix'} says {said.get(key)['said']}, its "
                       f"lever's ratio is {ratio}")
    return bad


# --- 6. one peak per trace -----------------------------------------------------------------------------------

def lines_of(out: dict) -> list[str]:
    """The report's five lines and its caveats."""
    return list(out.get("lines") or []) + list((out.get("trace") or {}).get("caveats") or [])


def _one_peak(said: Said, out: dict) -> list[str]:
    pk = out.get("peaks")
    if not pk:
        return []
    bad = []
    own = gbps(pk["bytes_per_s"] / 1e9)
    for c in said.all:
        if c["key"].endswith("peak_gbps") and gbps(c["value"]) != own:
            bad.append(f"a line judges against {c['said']}, the trace's peak is {own}")
        elif c["key"].endswith("peak_tflops") and not any(tflops(r / 1e12) == tflops(c["value"])
                                                          for r in (pk.get("flops_per_s") or {}).values()):
            bad.append(f"a line judges against {c['said']}, which is none of the trace's peaks")
    for line in lines_of(out):
        if "past the datasheet's" in line:   # a datasheet figure is not passed by a faster device (voice.peaks)
            bad.append(f"a line says a kernel passed the datasheet's peak as a fact: {line[:60]!r}")
    for line in ("regime", *NEXTS):
        for unit, say in (("gbps", gbps), ("tflops", tflops)):
            reached, peak = said.get(f"{line}.achieved_{unit}"), said.get(f"{line}.peak_{unit}")
            if reached is not None and peak is not None and say(reached["value"]) != say(peak["value"]) \
                    and reached["value"] > peak["value"]:
                bad.append(f"the {line} line says {reached['said']} reached, above the {peak['said']} peak it states")
    return bad


# --- 7. no number rounded to nothing --------------------------------------------------------------------------

def _no_number_rounded_to_nothing(lines: list[str]) -> list[str]:
    return [f"a number rounded to nothing: {m.group(0)!r} in {line[:60]!r}"
            for line in lines for m in _ROUNDED_TO_NOTHING.finditer(line)]


def _no_claim_rounded_to_nothing(said: Said) -> list[str]:
    return [f"a number rounded to nothing: {c['key']} is {c['value']:g}, said {c['said']!r}" for c in said.all
            if c["value"] > 0 and SAID_ZERO.match(c["said"]) and not c["key"].endswith("saving")
            and ".because." not in c["key"]]


# --- 9. the outlier step is what its steps show ------------------------------------------------------------------

_MOST_OF_THE_EXCESS = 0.5   # steps.OUTLIER_CAUSE_SHARE: the reason named holds at least half of the extra time


def _outlier_is_what_its_steps_show(said: Said, out: dict) -> list[str]:
    st = out.get("steps") or {}
    o = (st.get("summary") or {}).get("outlier")
    cols = st.get("per_step") or {}
    if o is None or "queued_busy_us" not in cols:
        return []
    i = cols["index"].index(o["step"])
    steady = [j for j in range(len(cols["index"])) if cols["regular"][j] and not cols["setup"][j]] or \
        [j for j in range(len(cols["index"])) if not cols["setup"][j]]
    own = [cols["kernel_busy_us"][j] - cols["queued_busy_us"][j] for j in steady]
    median_own = statistics.median(own)
    extra = o["extra_us"]
    bad = []
    longer = own[steady.index(i)] - median_own if i in steady else 0.0
    if said.get("measured.outlier.kernels_longer") is not None and longer < _MOST_OF_THE_EXCESS * extra - 1.0:
        bad.append(f"step {o['step']} is said to be slow because its kernels ran longer, but its own kernels ran "
                   f"{longer:,.1f} µs above the median step's, of {extra:,.1f} µs extra")
    queued = said.get("measured.outlier.queued_us")
    if queued is not None and cols["queued_busy_us"][i] < _MOST_OF_THE_EXCESS * extra - 1.0:
        bad.append(f"step {o['step']} is said to have run work queued before the window, but that work ran "
                   f"{cols['queued_busy_us'][i]:,.1f} µs of its {extra:,.1f} µs extra")
    return bad
