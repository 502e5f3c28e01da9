"""The triage: one Analysis of a trace, typed and frozen, built finished.

    analysis = analyze_file("traces/smell-sync-item.json.gz")
    print("\n".join(voice.five_lines(analysis)))      # the five-line report
    serialize.report(analysis)                         # the `--json` object

Everything a report, a dashboard or a drill grader shows comes from here: the idle
gaps with their causes and evidence (tracetriage.analyzers.analyses.idle), hotspots, named ranges,
roofline points, the regime and the next experiment. Consumers read fields, never
sentences (tracetriage.analyzers.voice says them), and never re-derive a number.
"""
from __future__ import annotations

import dataclasses
import os
from functools import partial
from pathlib import Path

# numpy.ma: numpy 2's np.unique imports it on its first plain call (10-15 ms of CPU); imported here, among the modules
# the command line imports while the read-ahead gunzips, so the levers' forked child (whatif.aside) inherits it
# instead of importing it again beside the analyses
import numpy as np
import numpy.ma  # noqa: F401

from tracetriage.analyzers.analyses import compile_cache as compile_cache_mod
from tracetriage.analyzers.analyses import decode_steps as decode_mod
from tracetriage.analyzers.analyses import framework as framework_mod
from tracetriage.analyzers.analyses import graph_breaks as breaks_mod
from tracetriage.analyzers.analyses import graph_capture as capture_mod
from tracetriage.analyzers.analyses import health as health_mod
from tracetriage.analyzers.analyses import hotspots, loader_start, steps_apart
from tracetriage.analyzers.analyses import idle as idle_mod
from tracetriage.analyzers.analyses import inference as inference_mod
from tracetriage.analyzers.analyses import ranges as ranges_mod
from tracetriage.analyzers.analyses import roofline as roof_mod
from tracetriage.analyzers.analyses import setup as setup_mod
from tracetriage.analyzers.analyses import steps as steps_mod
from tracetriage.analyzers.analyses.copies_async import copies_async
from tracetriage.analyzers.analyses.idle import dominant_cause
from tracetriage.analyzers.analyses.library_syncs import library_syncs
from tracetriage.analyzers.analyses.ranges import RangeStats
from tracetriage.analyzers.analyses.replay_clock import replay_clock, replay_gaps
from tracetriage.analyzers.analyses.roofline import Roofline
from tracetriage.analyzers.analyses.sparse_syncs import coalesce_syncs
from tracetriage.analyzers.analyses.trial_kernels import trial_kernels
from tracetriage.analyzers.analyses.weight_streaming import weight_streaming
from tracetriage.analyzers.loading import forked
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.loading.merged import MergedRanks
from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.health import Verdict
from tracetriage.analyzers.model.trace import KERNEL, MEMSET, Trace, capture_unrecorded, thread_key
from tracetriage.analyzers.model.verdicts import CAUSES, Cause, Experiment
from tracetriage.analyzers.triage import execution as execution_mod
from tracetriage.analyzers.triage import healthy as healthy_mod
from tracetriage.analyzers.triage import overhead as overhead_mod
from tracetriage.analyzers.triage import recurring, rework_first, sources, unprofiled_choice
from tracetriage.analyzers.triage.analysis import Analysis, host_only_of
from tracetriage.analyzers.triage.arithmetic_left import arithmetic_well
from tracetriage.analyzers.triage.bytes_left import moved_well
from tracetriage.analyzers.triage.lever_choice import LEVER_FLOOR
from tracetriage.analyzers.triage.next_experiment import calls_for, choose_next, host_tail_ns, weigh_levers
from tracetriage.analyzers.triage.pace import pace
from tracetriage.analyzers.triage.phases import phases_of_ranges, phases_of_shapes
from tracetriage.analyzers.triage.regime_withheld import withhold_regime
from tracetriage.analyzers.whatif import aside, depgraph
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import HEADROOM
from tracetriage.analyzers.whatif.windows import predict_windows


def analyze_trace(trace: Trace, range_name: str | None = None,
                  peer_transfer_ns: tuple[int, ...] | None = None) -> Analysis:
    """One trace's analysis; `peer_transfer_ns`: a rank's collectives measured against every rank of its run
    (`report DIR`: what the fastest rank's same call took, per call), so its waiting for a peer is the run's."""
    if trace.merged_ranks:   # several ranks' GPUs and clocks in one file: each rank is analysed on its own
        raise MergedRanks(trace)
    window = ranges_mod.window_of(trace, range_name) if range_name else None
    # the levers' replays in a forked child meanwhile, on a large trace (tracetriage.analyzers.whatif.aside)
    early = aside.start(trace, lambda t, handed: _levers(t, handed=handed)) if range_name is None else None
    try:
        roof = None
        if range_name is None:
            # the roofline and the steps' search here, once for both processes, handed to the child: its levers'
            # knobs read the roofline (their peaks, the kernels' bytes), the warm_up lever the set-up steps; the
            # child builds its dependency graph meanwhile (at x5 0.09 s of these against the graph's 0.11 s: found
            # before the fork, they held back the child, the report's tail, by as long)
            roof = roof_mod.analyze(trace)
            found = steps_mod.search(trace)
            if early is not None:
                # ... and the levers' set-up windows, which only the child reads: the child's levers took longer than
                # the parent's analyses (x5: the parent waited 0.05-0.09 s for it), the windows ~0.035 s of them;
                # with the top-level ops the windows were found from (setup.top_level_ops), which the levers read
                # as the ops' sequence: 0.03-0.05 s of the child's CPU at x5 where it found them again, handed as
                # 1.3 MB of int64 rows (158k)
                early.hand((roof, found, setup_mod.setup_excess(trace), setup_mod.top_level_ops(trace)))
        return _analyze(trace, range_name, window, early, peer_transfer_ns, roof)
    finally:
        if early is not None:
            early.discard()


def _analyze(trace: Trace, range_name: str | None, window: tuple[int, int] | None,
             early: forked.Child | None, peer_transfer_ns: tuple[int, ...] | None = None,
             roof: Roofline | None = None) -> Analysis:
    devs = tuple(idle_mod.analyze(trace, window))
    ev = trace.ev
    span = sum(d.span_ns for d in devs)
    idle_ns = sum(d.idle_ns for d in devs)
    by_cause = {c: sum(d.by_cause_ns[c] for d in devs) for c in CAUSES}
    rng_all = tuple(ranges_mod.analyze(trace, list(devs)))
    busy, copy, range_kernels = sum(d.kernel_busy_ns for d in devs), sum(d.copy_ns for d in devs), None
    if range_name:
        sel = next(r for r in rng_all if r.name == range_name)
        rows = sel.gpu_rows
        # a repeating range: its instances only, not everything between the first and the last; every
        # figure of the report (span, busy, idle, evidence, kernel count) on those instances alone
        devs = tuple(idle_mod.within(trace, list(devs), *iv.union(*sel.windows), rows))
        span, busy = sum(d.span_ns for d in devs), sum(d.kernel_busy_ns for d in devs)
        copy, idle_ns = sum(d.copy_ns for d in devs), sum(d.idle_ns for d in devs)
        by_cause = {c: sum(d.by_cause_ns[c] for d in devs) for c in CAUSES}
        range_kernels = int(np.sum(ev.cat[rows] == KERNEL))
    else:
        rows = hotspots.gpu_rows(trace)
        if window is not None:
            rows = rows[(ev.end[rows] > window[0]) & (ev.start[rows] < window[1])]
    roof = roof if roof is not None else roof_mod.analyze(trace)
    # cuDNN's benchmark trials time candidate algorithms: not the workload's kernels, left out of the regime's split
    trials = trial_kernels(trace) if devs else None
    kernel_rows = rows[ev.cat[rows] == KERNEL]
    if trials is not None:
        kernel_rows = kernel_rows[~np.isin(kernel_rows, trials.rows)]
    verdict = roof_mod.regime(trace, roof, kernel_rows, idle_ns / span if span else 0.0,
                              None if range_name else peer_transfer_ns,
                              recurring.recurring_idle_share(devs, idle_ns, span))
    range_verdicts = {r.name: roof_mod.regime(trace, roof, r.gpu_rows[ev.cat[r.gpu_rows] == KERNEL], r.idle_share)
                      for r in rng_all}
    fw = framework_mod.analyze(trace, devs, _setup_windows(devs)) if devs else None
    steps = steps_mod.find(trace, devs, fw) if range_name is None else None
    health = health_mod.check(trace, steps)
    verdict = withhold_regime(verdict, health, roof_mod.guessed_why_us(trace, roof, kernel_rows))
    if verdict.kernel_us > 0 and verdict.uncosted_why_us.get("graph_replay", 0.0) > 0:
        health = dataclasses.replace(
            health, replayed_share=verdict.uncosted_why_us["graph_replay"] / verdict.kernel_us,
            capture_unrecorded=capture_unrecorded(trace))
    # what reads no lever comes before the levers are waited for: the child replays them meanwhile
    capture = capture_mod.analyze(trace, devs) if devs else None
    inf = inference_mod.find(trace, steps, roof, devs, fw) if steps is not None and devs else None
    program = hotspots.outside_compiling(trace, rows)   # (torch.compile's own GPU work while compiling aside)
    hot, kern = hotspots.by_op(trace, program), hotspots.by_kernel(trace, program)
    host_only = None if devs else host_only_of(trace)
    source_lines = sources.source_lines(trace, rows, host_only.hotspots if host_only else hot, kern, devs,
                                        host_only is not None)
    fused_kernels = sources.fused_kernels(trace)
    pc = pace(trace, devs, rows, busy, span, verdict, roof.peaks, range_name is None and window is None, steps) \
        if devs else None
    loader_start_ns, tail_ns = loader_start.start_ns(trace) if devs else 0, host_tail_ns(trace, devs)
    memsets = rows[ev.cat[rows] == MEMSET]
    memset_ns = iv.total(*iv.union(ev.start[memsets], ev.end[memsets])) if len(memsets) else 0
    dtod = rows[(ev.cat[rows] != KERNEL) & (ev.cat[rows] != MEMSET) & idle_mod.on_device(trace, rows)]
    dtod_ns = iv.total(*iv.union(ev.start[dtod], ev.end[dtod])) if len(dtod) else 0
    # (library_syncs alone ~0.03 s of the 293 MB trace's: found here, while the child still replays the levers)
    phases = None if range_name else (phases_of_ranges(rng_all, range_verdicts) or phases_of_shapes(inf))
    streaming, breaks = weight_streaming(roof.points), breaks_mod.find(trace, steps)
    async_copies = copies_async(trace) if devs and by_cause.get(Cause.DATA_TRANSFER, 0) else None
    coalesced = coalesce_syncs(trace) if devs and by_cause.get(Cause.SYNCHRONIZATION, 0) else None
    lib_syncs = library_syncs(trace) if devs else None
    clock = replay_clock(trace) if devs and not range_name else None
    gaps = replay_gaps(trace) if devs and not range_name else None
    decode = decode_mod.find(trace, rng_all, steps, kernel_rows) if steps is not None and devs else None
    apart = steps_apart.apart(trace, steps)
    cache = compile_cache_mod.find(trace) if fw is not None and fw.first_compilations else None
    # (the op table's re-done work, ~0.035 s of the 293 MB trace's, reads no lever: found before they are waited for)
    rework = rework_first.found(trace, kernel_rows, fw) if devs and not range_name else None
    levers = (_range_levers(trace, sel, span) if range_name else _levers_of(trace, early, roof)) \
        if devs and not health.withheld(Verdict.WHATIF) else None
    choices = tuple(weigh_levers(levers)) if levers else ()
    dry = pc.dry if pc is not None else None
    choose = partial(choose_next, devs, by_cause, span, busy, idle_ns, verdict, roof, levers, fw=fw, capture=capture,
                     health=health, steps=steps, dry=dry, decode=decode,   # (the Next of the weighed fixes it is given)
                     loader_start_ns=loader_start_ns, tail_ns=tail_ns)
    nx = choose(choices)
    nx = nx if range_name else unprofiled_choice.by_unprofiled(nx, choose, choices, levers, trace, LEVER_FLOOR)
    nx = unprofiled_choice.with_unprofiled(nx, levers, trace)
    prof = overhead_mod.analyze(trace, levers, idle_ns / span if span else 0.0, verdict.regime,
                                dominant_cause(by_cause, idle_ns), window) if devs and not range_name else None
    nx = healthy_mod.no_lever_without_profiler(nx, levers, trace, choices, prof, verdict.regime, LEVER_FLOOR,
                                               lambda c: calls_for(c, by_cause, idle_ns, host_tail_ns(trace, devs)))
    if nx.then is not None and nx.lever is not None and nx.kind is not Experiment.WARM_UP and levers is not None:
        # what the bigger change adds once the knob is made: each lever alone prices some of the same time
        nx = dataclasses.replace(nx, then_joint_ratio=whatif.joint_ratio(levers, trace, nx.lever.lever, nx.then.lever))
    if nx.kind is Experiment.FEWER_BYTES and nx.lever is None and nx.healthy is None and devs and decode is None:
        well = moved_well(trace, rows[ev.cat[rows] == KERNEL], verdict.dtype, busy / span if span else 0.0, choices,
                          LEVER_FLOOR, HEADROOM)
        nx = dataclasses.replace(nx, moved_well=well)
    if nx.kind is Experiment.CHEAPER_ARITHMETIC and nx.lever is None and nx.healthy is None and devs:
        fed = arithmetic_well(verdict, roof.peaks, busy / span if span else 0.0, choices, LEVER_FLOOR, HEADROOM)
        nx = dataclasses.replace(nx, arithmetic_well=fed)
    if devs and not range_name:   # the op table's re-done work, where removing it bounds more (triage.rework_first)
        nx = rework_first.lead(nx, rework, busy / span if span else 0.0,
                               by_cause.get(Cause.LAUNCH_OVERHEAD, 0) / span if span else 0.0)
    execution = None if range_name else execution_mod.notes(trace, roof, verdict.regime, rows[ev.cat[rows] == KERNEL],
                                                            nx.kind)
    return Analysis(trace=trace, devices=devs, span_ns=span, kernel_busy_ns=busy, copy_ns=copy, memset_ns=memset_ns,
                    dtod_ns=dtod_ns, idle_ns=idle_ns, by_cause_ns=by_cause, hotspots=hot,
                    top_kernels=kern, ranges=rng_all, range_verdicts=range_verdicts, phases=phases,
                    roof=roof, verdict=verdict, range_filter=range_name,
                    host_only=host_only, levers=levers, lever_choices=choices,
                    next_experiment=nx,
                    range_kernels=range_kernels, framework=fw, graph_capture=capture, steps=steps, inference=inf,
                    source_lines=source_lines, fused_kernels=fused_kernels, health=health, profiler=prof,
                    execution=execution, weight_streaming=streaming, decode=decode, steps_apart=apart,
                    compile_cache=cache, graph_breaks=breaks, pace=pc,
                    copies_async=async_copies, coalesce_syncs=coalesced, library_syncs=lib_syncs, trials=trials,
                    replay_clock=clock, replay_gaps=gaps)


def _setup_windows(devs) -> tuple:
    """Every device's one-time set-up stretches on the host: (starts, ends, thread keys)."""
    ups = [d.setup for d in devs if d.setup is not None and len(d.setup.start)]
    if not ups:
        z = np.empty(0, np.int64)
        return z, z, z
    cat = np.concatenate
    key = cat([thread_key(u.pid, u.tid) for u in ups])
    return cat([u.start for u in ups]), cat([u.end for u in ups]), key


def _levers(trace: Trace, roof: Roofline | None = None, handed=None) -> whatif.Levers | None:
    """Every lever replayed; None when most GPU work has no launch call in the trace (the graph
    would not know what issued it, so no replay of it predicts anything). `handed`: in the levers' forked child,
    what waits for the parent's roofline and steps' search (analyze_trace), asked once the graph is built."""
    if _levers_unreadable(trace):
        return None
    try:
        if handed is None:
            return whatif.predict_levers(trace, roof)
        graph = depgraph.build(trace)
        roof, found, excess, top_ops = handed()
        steps_mod.search.remember(trace, found)
        setup_mod.setup_excess.remember(trace, excess)
        setup_mod.top_level_ops.remember(trace, top_ops)
        return whatif.predict_levers(trace, roof, graph)
    except whatif.WhatIfError:
        return None


def _levers_of(trace: Trace, early: forked.Child | None, roof: Roofline | None = None) -> whatif.Levers | None:
    """The levers the child replayed (tracetriage.analyzers.whatif.aside), else replayed here."""
    if early is not None:
        done, levers = early.result()
        if done:
            return levers
    return _levers(trace, roof)


def _range_levers(trace: Trace, sel: RangeStats, span_ns: int) -> whatif.Levers | None:
    """Every lever replayed on the whole trace, its saving read inside the range's instances and stated on
    the range's own span (tracetriage.analyzers.whatif.windows)."""
    if _levers_unreadable(trace) or sel.instances is None or not span_ns:
        return None
    try:
        w = predict_windows(trace, sel.instances, sel.windows[1], span_ns)
    except whatif.WhatIfError:
        return None
    return whatif.Levers(w, None, None)


def _levers_unreadable(trace: Trace) -> bool:
    """Most GPU work has no launch call in the trace: the graph would not know what issued it."""
    return any(c.kind == "unlinked_gpu" and 2 * c.count > c.total for c in trace.caveats)


def analyze_file(path: str | os.PathLike, range_name: str | None = None,
                 graph_capture: str | os.PathLike | None = None,
                 peer_transfer_ns: tuple[int, ...] | None = None) -> Analysis:
    """`graph_capture`: a separate trace of the CUDA-graph captures that `path` replays (vLLM and SGLang
    write one), whose ops the replayed kernels are charged to."""
    from tracetriage.analyzers.loading.graphs import with_capture
    from tracetriage.analyzers.loading.progress import bar

    with bar(Path(path)) as advance:
        trace = load(path, progress=advance)
        if graph_capture is not None:
            trace = with_capture(trace, load(graph_capture))
        advance("analyse")
        return analyze_trace(trace, range_name, peer_transfer_ns)
