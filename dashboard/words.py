"""The dashboard's words: captions, tooltips, table cells and messages of every page. Text shown
through st.markdown goes through `plain` first, so a kernel name is never markup or HTML.
"""
from __future__ import annotations

import re

from tracetriage.analyzers.model import units

# (the framework, steps and phases' words at the end of the file)
from tracetriage.analyzers.model.units import (
    a_or_an,
    count,
    duration_ns,
    duration_us,
    integer,
    ratio,
    saving_pct,
    share,
    signed,
    size,
    small_share,
    speed,
)
from tracetriage.analyzers.model.verdicts import Construct
from tracetriage.analyzers.voice.common import CAUSE_WORDS, CONSTRUCT_WORDS, construct_phrase

_MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$&:])")


def plain(text: str) -> str:
    """Text shown through st.markdown as the characters it holds: no markup, no HTML, no links."""
    return _MARKDOWN_SPECIALS.sub(r"\\\1", str(text))


def dashboard_cause(c: str | None) -> str:
    """A cause's words from its value ('launch_overhead'), 'none' for no cause."""
    return CAUSE_WORDS.get(c, c) if c else "none"

cause = dashboard_cause   # (the dashboard's tables map cause values to words with it)


# --- the library -------------------------------------------------------------------------------------


def upload_too_large(name: str, size_bytes: int, cap_mb: int) -> str:
    return (f"{name} is {size(size_bytes)}, over the {integer(cap_mb)} MB upload limit; start the dashboard with "
            f"TRACETRIAGE_UPLOAD_MB set higher, or pass the file on the command line")


def trace_error(message: str) -> str:
    return f"error: {message}"


def loaded(name: str, events: int, device: str) -> str:
    return f"Loaded {name}: {events:,} events on {device}."


def analysing(name: str) -> str:
    return f"Analysing {name}…"


def no_such_trace(key: str) -> str:
    return f"error: no trace {key} in the library (the link names a trace this server does not list)"


def pick_a_trace() -> str:
    return "Pick a trace in the Library first."


def pick_a_trace_here() -> str:
    return "Pick a sample, a trace from the command line, or upload one."


def pick_placeholder() -> str:
    return "Choose a trace"


def sample_about(about: str, cause_label: str | None, regime: str | None) -> str:
    built = ", ".join(x for x in (f"idle: {dashboard_cause(cause_label)}" if cause_label else "",
                                  f"regime: {regime}" if regime else "") if x)
    return f"{about} ({built})" if built else about


def entry_option(e) -> str:
    """A trace as the Library's pickers list it: its name and, for a sample with a label, what it shows."""
    return f"{e.name} — {e.about}" if e.about else e.name


def open_report() -> str:
    return "Open its report"


def open_timeline() -> str:
    return "Open its timeline"


def sample_in_folder(folder: str) -> str:
    return f"From traces/{folder}/ (traces/CAPTURED.md says what each is)."


def run_member(run: str) -> str:
    return f"One rank of the multi-rank run {run} (the Ranks page compares its ranks)."


def directory_caption(name: str) -> str:
    return f"Traces in {name}/, the directory the dashboard was started on."


def no_traces_in_directory() -> str:
    return "No trace files in it (JSON or gzipped JSON whose content is a torch.profiler trace)."


def upload_label(cap_mb: int) -> str:
    return f"A torch.profiler trace (.json or .json.gz, up to {cap_mb} MB)"


# --- report ------------------------------------------------------------------------------------------


def cause_evidence(c: str, gaps: int, median_gap_us: float, max_gap_us: float, names: list[str]) -> str:
    if gaps == 0:
        return "no gaps"
    s = (f"{gaps:,} gap{'s' if gaps != 1 else ''}, median {duration_us(median_gap_us)}, "
         f"longest {duration_us(max_gap_us)}")
    return s + (f"; {', '.join(names)}" if names else "")


def idle_bar_label(idle_us: float, share_shown: str) -> str:
    """'1.99 ms (3%)': the share as the Idle line prints it (frames.report.idle_by_cause's share_shown)."""
    return f"{duration_us(idle_us)} ({share_shown})" if idle_us else ""


def regime_cell(regime: str | None) -> str:
    return regime if regime else "not judged"


def no_ranges() -> str:
    return "No named ranges in this trace (record_function / named_range)."


def phase_summary(ttft_us: float, per_token_us: float, steps: int, tokens_per_prefill: int) -> str:
    return (f"Time to first token {duration_us(ttft_us)}; {duration_us(per_token_us)} per token over "
            f"{count(steps, 'decode step')} ({integer(tokens_per_prefill)} per prefill).")


# --- timeline ----------------------------------------------------------------------------------------


def ms(x: float) -> str:
    """A time on the timeline's axis: ms from the start of the GPU span, signed before it ('−2.623 ms')."""
    text = f"{abs(x):,.3f} ms"
    return ("−" if x < 0 else "") + text


def time_axis_title() -> str:
    return "ms from the start of the GPU span"


def window_caption(events: int, lo_ms: float, hi_ms: float, limit: int, bins: int | None) -> str:
    span = f"{ms(lo_ms)} to {ms(hi_ms)} ({duration_us((hi_ms - lo_ms) * 1e3)})"
    if bins is not None:
        return (f"{events:,} events from {span}: shown as busy shares in {bins} bins. Drag across the chart to zoom; "
                f"each event is drawn once the window holds {limit:,} or fewer.")
    return (f"{events:,} events from {span}, each drawn. Drag across the chart to zoom further; click an event to "
            "light up its flow (an op, its launch calls, their kernels).")


def bin_tooltip(lane: str, busy: float) -> str:
    return f"{lane}: busy {share(busy)} of the bin"


def bin_range(start_ms: float, end_ms: float) -> str:
    return f"{ms(start_ms)} to {ms(end_ms)}"


def idle_bin_tooltip(idle: float, shares: dict[str, float]) -> str:
    ranked = [(c, v) for c, v in sorted(shares.items(), key=lambda kv: -kv[1]) if v > 0]
    parts = ", ".join(f"{dashboard_cause(c)} {share(v)}" for c, v in ranked)
    lead = f"mostly {dashboard_cause(ranked[0][0])}; " if ranked else ""
    return f"idle {share(idle)} of the bin, {lead}{parts}"


_CONSTRUCT_LANES = {"compile": "torch.compile compiling", "allocator": "caching allocator", "dataloader": "DataLoader",
                    "optimizer": "optimizer step", "collective": "collectives", "backward": "autograd backward",
                    "compiled": "compiled code", "module": "nn.Module forwards"}


def construct_lane(construct: str) -> str:
    """The label of a framework construct's lane on the timeline."""
    return _CONSTRUCT_LANES.get(construct, construct)


def step_label(i: int) -> str:
    return f"step {i}"


def search_label() -> str:
    return "Search events by name"


def search_help() -> str:
    return "Part of a name, any case (aten::mm, nccl, cudaStreamSynchronize). Enter jumps to the first match."


def search_caption(text: str, count: int, index: int | None, names: tuple[str, ...], at_ms: float | None) -> str:
    if not count:
        return f"No event named like “{text}”."
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3:,} more names" if len(names) > 3 else "")
    where = f"; match {index + 1:,} of {count:,} at {ms(at_ms)}" if index is not None and at_ms is not None else ""
    return f"{count:,} events named like “{text}” ({shown}){where}, outlined in black."


def flow_role(role: str) -> str:
    return {"op": "the op that issued it", "launch call": "launch call", "GPU": "GPU work it queued"}.get(role, role)


def selected_event(name: str, kind: str, lane: str, start_ms: float, dur: str, shapes: str) -> str:
    s = f"Selected: {name} ({kind}, {dur}) on {lane} at {ms(start_ms)}"
    return s + (f"; inputs {shapes}" if shapes else "") + "."


def queued_help() -> str:
    return ("GPU work: the time from its launch call's start to its own start "
            "(the launch queue and the device's backlog).")


def flow_caption(steps: int) -> str:
    if not steps:
        return "Nothing linked to it in the trace (no launch call, no GPU work)."
    return "Its flow, lit up in magenta on the chart (queued: from the launch call's start to the GPU work's)."


def gap_evidence(c: str, dur_us: float, host_call: str, called_from: str, next_name: str) -> str:
    s = f"{dashboard_cause(c)} gap of {duration_us(dur_us)}"
    if host_call:
        s += f"; the host was in {host_call}" + (f" (from {called_from})" if called_from else "")
    if next_name:
        s += f"; ended by {next_name}"
    return s


# --- roofline ----------------------------------------------------------------------------------------


def ceilings_caption(device: str, source: str, dtype: str, tflops: float, gbps: float, ridge: float,
                     passed: str = "") -> str:
    where = "measured on this machine (tracetriage capture ceilings)" if source != "datasheet" else "from the datasheet"
    return (f"{device}, {dtype}: {units.tflops(tflops)} and {units.gbps(gbps)}, ridge at {units.num(ridge)} FLOP/byte; "
            f"ceilings {where}" + (f"; {passed}" if passed else "") + ".")


def ridge_label(ridge: float) -> str:
    return f"ridge {units.num(ridge)} FLOP/byte"


def no_ceilings(device: str) -> str:
    return f"No peak table entry for {device}: the roofline has no ceilings (run tracetriage capture ceilings)."


def points_caption(shown: int, total: int, dtype: str) -> str:
    hidden = total - shown
    s = f"{shown:,} op{'s' if shown != 1 else ''} in {dtype}, sized by device time, coloured by bound"
    return s + (f"; {hidden:,} with no FLOPs (copies, fills) are off the log axes." if hidden else ".")


def no_points() -> str:
    return "No op in this trace has a cost model (no shapes recorded): nothing to place on the roofline."


# --- diff --------------------------------------------------------------------------------------------


def diff_headline(before: str, after: str, speedup: float | None, explained_by: str) -> str:
    sp = speed(speedup) if speedup else "no speedup figure"
    return f"{before} → {after}: {sp}, explained by {explained_by or 'nothing single'}."


_NO_FIGURE = "—"


def _figure(unit: str, x) -> str:
    if x is None:
        return _NO_FIGURE
    if unit == "us":
        return duration_us(x)
    if unit == "bytes":
        return size(x)
    return f"{round(x):,}"


def diff_measure(label: str, unit: str, before, after, *, speedup: float | None = None, change_us: float | None = None,
                 ratio_value: float | None = None, same: bool = False) -> tuple[str, str, str, str]:
    """A row of the diff's measures table, each cell in its unit: (measure, before, after, change)."""
    if speedup is not None:
        change = speed(speedup)
    elif change_us is not None:
        change = ("−" if change_us < 0 else "+") + duration_us(change_us)
    elif ratio_value is not None:
        change = ratio(ratio_value, same)
    else:
        change = _NO_FIGURE
    return label, _figure(unit, before), _figure(unit, after), change


def before_after_count(before: int | None, after: int | None) -> str:
    return f"{_figure('count', before)} → {_figure('count', after)}"


def before_after_bytes(before: float | None, after: float | None) -> str:
    return f"{_figure('bytes', before)} → {_figure('bytes', after)}"


def diff_ops_caption(per_step: bool) -> str:
    s = ("Device time by op (the op that launched the work, or the kernel's name when no op did), largest change "
         "first; bytes are what its kernels move by their shapes and its copies recorded (— : no byte count).")
    return s + (" Per profiled step: each side's totals over its steps." if per_step else "")


def diff_span_label(per_step: bool) -> str:
    """The first measure of the diff's table: what the diff compares."""
    return "mean profiled step" if per_step else "GPU span"


def diff_timelines_caption() -> str:
    return ("Both traces on one time axis, each from the start of its GPU span; "
            "binned past 5,000 events like the Timeline.")


def before_title(name: str) -> str:
    return f"before: {name}"


def after_title(name: str) -> str:
    return f"after: {name}"


def diff_pick_both() -> str:
    return "Pick the trace before the change and the trace after it."


def need_two_traces() -> str:
    return "The library needs two traces to compare."


# --- perfetto ----------------------------------------------------------------------------------------


def annotated_caption(gaps: int) -> str:
    return (f"The trace with an added track of its {gaps:,} idle gaps, named by cause with their evidence, "
            "for ui.perfetto.dev or chrome://tracing.")


# --- what-if -----------------------------------------------------------------------------------------


def whatif_caption(baseline_ns: float, replay_ns: float, gpu_span_ns: float | None = None) -> str:
    err = (replay_ns - baseline_ns) / baseline_ns * 100 if baseline_ns else 0.0
    gpu = f" (the report's GPU span, first to last GPU activity, is {duration_ns(gpu_span_ns)})" \
        if gpu_span_ns else ""
    return (f"Traced span, host and GPU: {duration_ns(baseline_ns)}, the baseline of every prediction here{gpu}; "
            f"replaying the unchanged dependency graph gives {duration_ns(replay_ns)} ({signed(err, '.1f', '%')}), "
            "which is how far to trust the predictions.")


def lever_line(lever: str, predicted_ns: float, ratio: float, saving_ns: float, baseline_ns: float) -> str:
    return (f"{lever}: {duration_ns(predicted_ns)} predicted, {ratio:.2f} of the traced span "
            f"({saving_pct(saving_ns, baseline_ns)})")


def traced_span_label(baseline_ns: float) -> str:
    return f"traced {duration_ns(baseline_ns)}"


def lever_bar_label(predicted_ns: float, saving_ns: float, baseline_ns: float) -> str:
    """The value written at the end of a lever's bar: '34.6 ms (−38%)'."""
    return f"{duration_ns(predicted_ns)} ({saving_pct(saving_ns, baseline_ns)})"


def span_note(baseline_ns: float, report_span_ns: float, agree: bool, host_outside_us: float) -> str:
    """Whether the what-if's traced span is the report's span, and why not when it is not."""
    if agree:
        return f"The traced span is the report's GPU span, {duration_ns(report_span_ns)}."
    return (f"The traced span ({duration_ns(baseline_ns)}) runs from the first traced event to the last, host work "
            f"included, because a lever moves host work too: {duration_us(host_outside_us)} "
            f"{'more' if host_outside_us > 0 else 'less'} than the report's GPU span ({duration_ns(report_span_ns)}), "
            "which runs from the first GPU activity to the last.")


def measured_timeline_title(baseline_ns: float) -> str:
    return f"measured: GPU activities as traced (traced span {duration_ns(baseline_ns)})"


def predicted_timeline_title(lever: str, predicted_ns: float) -> str:
    return f"predicted under {lever} (span {duration_ns(predicted_ns)})"


def whatif_timeline_caption(activities: int, binned: bool, bins: int, limit: int) -> str:
    how = (f"shown as busy shares in {bins} bins (more than {limit:,})" if binned else "each drawn")
    return (f"{activities:,} GPU activities, {how}; the predicted times are the replay's own, on the same time axis "
            "as the measured ones.")


def no_whatif() -> str:
    return "No GPU timeline in this trace: the what-if replay needs GPU activity (ProfilerActivity.CUDA)."


# --- ranks -------------------------------------------------------------------------------------------


def ranks_caption(run: str, from_command_line: bool) -> str:
    where = "the directory the dashboard was started on" if from_command_line else "a sample run"
    return f"{run}/, {where}: each rank analysed in its own process, as tracetriage report DIR does."


def no_runs() -> str:
    return ("No multi-rank run here: start the dashboard on a directory of rank traces "
            "(tracetriage dashboard traces/ddp), or open a sample run.")


def analysing_ranks(done: int, total: int) -> str:
    return f"Analysing rank {done} of {integer(total)}…"


def collective_steps_title() -> str:
    return "collective time per step, by rank"


def open_rank_timeline(rank: int, straggler: bool) -> str:
    return f"Rank {rank}'s timeline" + (" (the straggler)" if straggler else "")


def median_per_step_help() -> str:
    return "The median over the steps of the rank's collective kernel time per step (what the straggler rule compares)."


def host_step_help() -> str:
    return ("The median interval between the launches of the rank's collectives: "
            "how long its host takes to issue a step.")


def rank_cell(rank: int, straggler: bool) -> str:
    return f"{rank}" + (" (straggler)" if straggler else "")


def ranks_report_title() -> str:
    return "The report of the run, as tracetriage report DIR prints it"


def ranks_table_caption() -> str:
    return "Pick a row to open that rank's timeline."


# --- drills and predictions --------------------------------------------------------------------------


def drill_label(drill_id: str, title: str) -> str:
    return f"{drill_id}  {title}"


def drill_about(lesson: str, kind: str, source: str) -> str:
    return f"Lesson: {lesson}. Kind: {kind.replace('_', ' ')}. Trace: {source}."


def drill_timeline_caption(name: str) -> str:
    return (f"{name}: the lanes as traced, the idle gaps left unmarked (their causes are what the drill may ask; "
            "the grade quotes the evidence).")


def answer_not_a_number(part: str, text: str) -> str:
    return f"{part} must be a number, got {text!r}"


def part_feedback(part: str, score: float, weight: float, feedback: str) -> str:
    return f"{part}: {score:.2f} × {weight:.2f}. {feedback}"


def attempt_recorded(attempt: int, path) -> str:
    return f"Attempt {attempt} recorded in {path}."


def no_predictions(path) -> str:
    return (f"No predictions in {path} yet: record one with tracetriage predict QUANTITY VALUE --why TEXT "
            "--trace PATH.")


def calibration_caption(plotted: int, total: int) -> str:
    return (f"{integer(plotted)} of {count(total, 'prediction')} measured and plotted: predicted against measured, "
            "log-log; the dashed line is a perfect prediction, the grey band within 2× of it. "
            "Quantities have their own units.")


# --- framework constructs, steps and phases on the timeline and the report ---------------------------
# (tracetriage.analyzers.analyses.framework, .steps, .inference: the words of what they found, shown where it happened)


def construct_name(x, optimizer: str | None = None) -> str:
    """A construct's name in a table: 'AdamW's step (Optimizer.step)', 'the DataLoader's __next__'."""
    if x.construct is Construct.OPTIMIZER and optimizer:
        return f"{optimizer}'s step (Optimizer.step)"
    return CONSTRUCT_WORDS[x.construct]


def construct_name_of(c: Construct) -> str:
    return CONSTRUCT_WORDS[c]


def construct_doing(x, optimizer: str | None, idle_share: float) -> str:
    """What a construct did over the trace, for a tooltip: 'AdamW's step (Optimizer.step): 96 launches in 24
    calls; 6% of all idle', 'the DataLoader's __next__: 12 calls; 66% of all idle'."""
    if x.construct is Construct.USER:
        what = "your own code, outside any framework construct"
        what += f": {count(x.launches, 'launch', 'launches')}" if x.launches else ""
    else:
        what = construct_phrase(x, optimizer)
        what += f": {count(x.ranges, 'call')}" if not x.launches and x.ranges else ""
    return what + (f"; {small_share(idle_share)} of all idle" if idle_share else "")


def idle_held(doing: str, share_of_idle: float | None = None) -> str:
    """Where the host was while the GPU idled: the construct's doing, and how much of the bin's idle it holds."""
    return doing + (f" ({share(share_of_idle)} of this bin's idle)" if share_of_idle is not None else "")


def no_construct() -> str:
    return "no framework analysis of this trace"


def _idle_parts(idle_by_cause_ns: dict) -> str:
    ranked = sorted(((c, ns) for c, ns in idle_by_cause_ns.items() if ns > 0), key=lambda kv: -kv[1])
    return ", ".join(f"{dashboard_cause(getattr(c, 'value', c))} {duration_ns(ns)}" for c, ns in ranked)


def step_detail(wall_ns: int, kernel_busy_ns: int, idle_by_cause_ns: dict, setup: bool, regular: bool,
                outlier_words: str | None) -> str:
    """A step's tooltip: '46.8 ms wall, kernels busy 477 µs, idle 46.4 ms (host work 41.9 ms, ...); the outlier:
    step 7 took 5.7× the median ...'."""
    idle = sum(idle_by_cause_ns.values())
    s = f"{duration_ns(wall_ns)} wall, kernels busy {duration_ns(kernel_busy_ns)}, idle {duration_ns(idle)}"
    s += f" ({_idle_parts(idle_by_cause_ns)})" if idle else ""
    if outlier_words:
        s += f"; the outlier: {outlier_words}"
    if setup:
        s += "; pays one-time set-up (first calls, compilation), kept apart from the median"
    elif not regular:
        s += "; not the loop's repeated structure (a prologue, or a step that differs)"
    return s


def found_step_label(index: int) -> str:
    """A step found by tracetriage.analyzers.analyses.steps, numbered as the report numbers it (from 0)."""
    return f"step {index}"


def steps_lane_label() -> str:
    return "steps"


def phases_lane_label() -> str:
    return "prefill / decode"


def phase_step_detail(kind: str, step: int | None, wall_ns: float, phase_words: str) -> str:
    """A phase span's tooltip: 'decode step 5, 4.54 ms; per token: median 4.32 ms, p90 4.79 ms over 31 steps;
    overhead-bound'."""
    which = f"{kind} step {step}" if step is not None else kind
    return f"{which}, {duration_ns(wall_ns)}" + (f"; {phase_words}" if phase_words else "")


def prefill_words(ttft_us: float, ttft_p90_us: float, requests: int, regime: str) -> str:
    over = f" (median over {requests} requests, p90 {duration_us(ttft_p90_us)})" if requests > 1 else ""
    return f"time to first token {duration_us(ttft_us)}{over}; prefill is {regime}-bound"


def decode_words(median_us: float, p90_us: float, steps: int, regime: str) -> str:
    return (f"per token: median {duration_us(median_us)}, p90 {duration_us(p90_us)} over {count(steps, 'step')}; "
            f"decode is {regime}-bound")


def mixed_words() -> str:
    return "prefill and decode tokens in one batch (continuous batching), counted in neither phase"


def phase_latency(kind: str) -> str:
    """What a phase's latency measures, for the phase table."""
    return {"prefill": "time to first token", "decode": "per token"}.get(kind, kind)


def phases_found(found_from: str, ranges: tuple[str, ...], prompt_tokens: int | None, batch: int | None,
                 mixed_steps: int, decode_inferred: bool) -> str:
    """Where prefill and decode came from, under the phase table."""
    if found_from == "shapes":
        seq = a_or_an(f"{integer(prompt_tokens)}-token prompt") if prompt_tokens else "a prompt"
        s = f"Found from the ops' input shapes ({seq}{f', batch {batch}' if batch else ''}; no named ranges)"
        if decode_inferred:
            s += "; the decode steps record no shapes (compiled code or CUDA-graph replays): taken as decode"
    else:
        s = f"From the named ranges {' and '.join(ranges)}"
    if mixed_steps:
        s += f"; {count(mixed_steps, 'mixed step')} (prefill and decode tokens in one batch) in neither phase"
    return s + ". The phase lane on the Timeline shows each step."


def no_constructs() -> str:
    return ("No framework construct (DataLoader, optimizer step, backward, torch.compile ...) is marked in this trace: "
            "its idle and launches are all your own code's.")


def framework_caption() -> str:
    return ("Whose code made the idle and the launches: each idle gap is charged to the framework construct around "
            "the host call that explains it, each launch to the construct around its call; what no construct covers "
            "is your own code. Hover the Timeline's idle lane for the construct of each bin and gap.")


# --- the Try page ------------------------------------------------------------------------------------------------

def try_path_label() -> str:
    return "A try table: the --out folder of `tracetriage try`, or its try.json"


def try_pick() -> str:
    return ("Run `tracetriage try SCRIPT` (it keeps its table as try.json in its --out folder, SCRIPT_STEM.try/ by "
            "default), then give that folder or file here, or open this page as /try?try=PATH.")


def try_caption(script: str, device: str, repeats: int) -> str:
    where = "the GPU" if device == "cuda" else "the CPU"
    return (f"tracetriage try {script}, on {where}, {repeats} profiled and {repeats} unprofiled "
            f"run{'s' if repeats != 1 else ''} a knob. Each bar is the change of the span the knob makes (a saving "
            "is a minus): the prediction beside the median measured, the line across a measured bar the runs' range.")


def try_chart_title(run: str) -> str:
    return {"profiled": "profiled: the traced span", "unprofiled": "unprofiled: the script's wall time"}[run]


def try_axis_title(run: str) -> str:
    """The quantity the run's chart plots: the unprofiled chart is the script's wall time, not a span."""
    what = {"profiled": "the traced span", "unprofiled": "the wall time"}[run]
    return f"change of {what} (%; a saving is a minus)"


def try_no_bars() -> str:
    return "Nothing to draw: no knob of this table has a prediction or a measurement yet."


def try_gpu_only(keys: tuple[str, ...]) -> str:
    return "Only mean something on a GPU, so not run there: " + ", ".join(keys) + "."


def try_stopped(why: str) -> str:
    return f"Stopped early: {why}; the runs done are drawn."


def try_cell(x: dict | None) -> str:
    """A predicted or measured saving as the try table prints it: '−12%', with the measured range."""
    if x is None:
        return "—"
    if isinstance(x, dict):
        med = f"{-100 * x['median']:+.0f}%".replace("-", "−")
        return med + (f" ({-100 * x['high']:+.0f}% to {-100 * x['low']:+.0f}%)".replace("-", "−")
                      if x.get("runs", 1) > 1 else "")
    return f"{-100 * x:+.0f}%".replace("-", "−")


def try_bar_label(pct: float) -> str:
    """A bar's value on the Try page's chart, as the table writes it: '−62%'."""
    return f"{pct:+.0f}%".replace("-", "−")
