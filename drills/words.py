"""The drills' words: per-part feedback that quotes the trace, the lines of `drill list` and
`drill show` (and the terminal timeline's legend), and the prediction log's lines.
"""
from __future__ import annotations

from tracetriage.analyzers.model.units import duration_us, num, share
from tracetriage.analyzers.voice.common import CAUSE_WORDS, REGIME

PATTERN = {
    "launch_overhead": "many short gaps between short kernels: each kernel ends before the next launch arrives",
    "host_work": "long gaps in which the host launches nothing",
    "synchronization": "a drain after each sync: the queue runs dry while the host waits, then refills",
    "data_transfer": "compute idles while copies occupy the device",
}


# --- the trace's own evidence ------------------------------------------------------------------------


def evidence(cause: str, e: dict, part: float) -> str:
    """What the trace shows for one idle cause: counts, medians, the calls and copies behind it."""
    head = f"{CAUSE_WORDS[cause]} is {share(part)} of the span"
    if cause == "launch_overhead":
        ops = ", ".join(e.get("launching_ops", []))
        return (f"{head}: {e['gaps']:,} gaps with a median of {duration_us(e['median_gap_us'])} "
                f"between {e['kernels']:,} kernels whose median run is {duration_us(e['kernel_median_us'])}, "
                f"while a launch call takes {duration_us(e['launch_call_median_us'])}"
                + (f" (launched by {ops})" if ops else ""))
    if cause == "host_work":
        traced = ", ".join(e.get("host_events", []))
        return (f"{head}: {e['gaps']:,} gaps with a median of {duration_us(e['median_gap_us'])} "
                f"in which the host launched nothing, {share(e.get('untraced_share', 0))} of it untraced "
                f"(Python, numpy, sleeping)"
                + (f"; traced host ops: {traced}" if traced else ""))
    if cause == "synchronization":
        calls = ", ".join(f"{c['name']} ×{c['count']}" for c in e.get("sync_calls", []))
        src = ", ".join(e.get("called_from", []))
        return (f"{head}: {e['gaps']:,} drains with a median of {duration_us(e['median_gap_us'])}, "
                f"after {calls or 'syncs'}" + (f" called from {src}" if src else ""))
    if cause == "data_transfer":
        copies = e.get("copies") or []
        if copies:
            c = copies[0]
            rate = f" at {c['gbps']:.1f} GB/s" if c.get("gbps") else ""
            what = f"mostly {c['name']} ×{c['count']}, {c['bytes'] / 1e9:.2f} GB{rate}"
        else:
            what = "copies"
        return f"{head}: {e.get('copy_count', 0):,} copies, {what}"
    return f"{head}: {e['gaps']:,} gaps with no launch call in the trace"


def evidence_short(cause: str, e: dict) -> str:
    """The shape of the gaps alone: what the pattern part is about."""
    if cause == "synchronization":
        return f"{e['gaps']:,} drains with a median of {duration_us(e['median_gap_us'])}"
    if cause == "data_transfer":
        copies = e.get("copies") or []
        rate = f" at {copies[0]['gbps']:.1f} GB/s" if copies and copies[0].get("gbps") else ""
        return f"{e.get('copy_count', 0):,} copies{rate} while no kernel runs"
    if cause == "launch_overhead":
        return (f"{e['gaps']:,} gaps with a median of {duration_us(e['median_gap_us'])} between kernels whose "
                f"median run is {duration_us(e.get('kernel_median_us', 0))}")
    return f"{e['gaps']:,} gaps with a median of {duration_us(e['median_gap_us'])}"


# --- per-part feedback -------------------------------------------------------------------------------


def blank(part: str) -> str:
    return f"No answer for {part}."


def cause_right(cause: str, ev: str) -> str:
    return f"Right: {CAUSE_WORDS[cause]}. The trace: {ev}."


def cause_wrong(said: set, cause: str, ev: str) -> str:
    heard = (" and ".join(CAUSE_WORDS.get(c, REGIME.get(c, c)) for c in sorted(said)) if said
             else "none of the four causes")
    return f"You named {heard}; the trace says {CAUSE_WORDS[cause]}: {ev}."


def both(what: str, said: set) -> str:
    return f"Half credit: you named {label(what)} but also {', '.join(label(c) for c in sorted(said))}; commit to one."


def doubted(what: str, credit: float, why: str) -> str:
    return (f"Most of it ({num(credit)}): {what} is right, but held in doubt (\"probably\", \"could be\"): the "
            f"trace decides it, so say it. {why}")


def hedged(what: str, said: set, credit: float = 0.0) -> str:
    others = " or ".join(label(c) for c in sorted(said))
    earns = (f"a hedge that leans to the right one earns {num(credit)}" if credit >= 0.5 else
             f"a hedge earns {num(credit)} and, in the part that decides, caps the score at 0.6" if credit
             else "a list of the options earns what a wrong answer earns")
    return f"You offered {label(what)} or {others}: {earns}; the trace decides between them, so commit to one."


def denied(what: str, why: str) -> str:
    return f"You ruled out {label(what)}, and that is the answer: {why}."


# The report's kinds of Next as a student names them (drills/vocab.toml [lever.*]).
LEVER_LABEL = {
    "cut_launches": "cutting launches (CUDA graphs, torch.compile, bigger batches)",
    "fuse": "fusing the chain (torch.compile, a Triton kernel)",
    "move_host_work": "moving the host work off the critical path (workers, prefetch)",
    "remove_syncs": "removing or deferring the syncs",
    "overlap_copies": "overlapping the copies (non_blocking on a side stream, or data resident on the device)",
    "pin_memory": "pinning the host memory",
    "cheaper_arithmetic": "cheaper arithmetic (lower precision on tensor cores, less work)",
    "fewer_bytes": "moving fewer bytes (lower precision, in place)",
    "faster_kernels": "faster kernels",
    "fuse_optimizer": "a fused or foreach optimizer",
    "warm_up": "warming up before the profile",
    "compile_once": "compiling once (static or marked-dynamic shapes)",
    "overlap_comm": "overlapping communication with compute",
    "warm_up_first": "warming up",
}


def lever_label(cls: str) -> str:
    return LEVER_LABEL.get(cls, cls.replace("_", " "))


def lever_feedback(case: str, score: float, key: dict, nw: dict, said: set) -> str:
    """A lever part's feedback in the report's own words (its Next and its "would waste the week")."""
    fix = nw.get("lever", lever_label(key["next"]))
    waste = f" Would waste the week: {nw['waste']}." if nw.get("waste") else ""
    heard = " and ".join(lever_label(c) for c in sorted(said)) or "no fix the course's vocabulary places"
    if case == "right":
        return f"Yes, the report's Next on this trace: {fix}.{waste}"
    if case == "waste" and score > 0:
        spent = lever_label(key.get("waste_class") or key["waste_classes"][0])
        return (f"Half credit: the fix is in your plan, but so is {spent}, the lever that "
                f"would waste the week here ({nw.get('waste', '')}). The fix: {fix}.")
    if case == "waste":
        return f"That is the lever that would waste the week here: {nw.get('waste', '')}. The report's Next: {fix}."
    if case == "partial":
        return f"Half credit: {heard} helps, less than the report's Next: {fix}."
    if case == "vague":
        return f"The right direction ({heard}), but name the tool that does it: {fix}.{waste}"
    if case == "fusion_only":
        why = ("fusing to cut the bytes is the right tool for the wrong reason: the GPU idles between launches, "
               "and the bytes are not what it waits on" if score < 0.5 else
               "fusing trims some launches but leaves the gap before each of the rest; what closes the gaps is "
               "capturing the step in a CUDA graph or giving each launch more work")
        return f"Part credit ({num(score)}): {why}. The report's Next: {fix}."
    if case == "hedge":
        offered = " or ".join(lever_label(c) for c in sorted(said))
        earns = (f"a hedge that leans to the right one earns {num(score)}" if score >= 0.5 else
                 f"a list of the options earns {num(score)}" if len(said) > 2 and score else
                 f"a hedge earns {num(score)}" if score else "a hedge with no right option in it earns nothing")
        return f"You offered {offered}: {earns}; commit to one. The report's Next: {fix}."
    if case == "denied":
        return f"You ruled out {lever_label(key['next'])}, and that is the report's Next here: {fix}."
    if case == "pinned":
        return f"The copies are pinned already, so pinning buys nothing here: {fix}."
    return f"You named {heard}; the report's Next on this trace: {fix}.{waste}"


def number_hedged(part: str, offered: tuple, key: float, unit: str, credit: float = 0.0) -> str:
    said = " or ".join(v if isinstance(v, str) else f"{num(v)} {unit}" for v in offered)
    earns = (f"a hedge that leans to the right one earns {num(credit)}" if credit >= 0.5 else
             f"a hedge earns {num(credit)} and counts as a wrong answer for the cap" if credit
             else "a hedge earns what a wrong answer earns")
    return f"You offered {said}: {earns}; {part} in the trace: {num(key)} {unit}."


def number_confused(part: str, said: float, confused: tuple, key: float, unit: str) -> str:
    what, value = confused
    return (f"{num(said)} {unit} is {what} ({num(value)} {unit}), another quantity of this trace; {part} is "
            f"{num(key)} {unit}.")


def own_prediction(savings: dict) -> str:
    """The replay's prediction for the levers the answer named ({lever: saving share of the span})."""
    said = ", ".join(f"{lv} {_saving(sv)}" for lv, sv in sorted(savings.items(), key=lambda x: -x[1]))
    return f" What the replay predicts for yours: {said}."


def _saving(share_saved: float) -> str:
    pct = round(100 * share_saved)
    return "0%" if pct == 0 else f"−{pct}%" if pct > 0 else f"+{-pct}% (slower)"


def no_number(part: str, key: float, unit: str, other_dim: str | None) -> str:
    if other_dim:
        return (f"That is {DIMENSION_WORDS.get(other_dim, other_dim)}; {part} is in {unit} "
                f"(the trace: {num(key)} {unit}).")
    return f"No number in the answer; the trace says {num(key)} {unit}."


DIMENSION_WORDS = {"time": "a time", "bandwidth": "a bandwidth", "flops": "an arithmetic rate", "share": "a share",
                   "ratio": "a ratio", "bytes": "a size in bytes", "intensity": "an arithmetic intensity"}
# one step along the unit ladder from a key's unit: the unit the student probably meant
LADDER_UNIT = {("GB", 1000.0): "MB", ("GB", 0.001): "TB", ("ms", 1000.0): "µs", ("ms", 0.001): "s",
               ("µs", 1000.0): "ns", ("µs", 0.001): "ms",
               ("GB/s", 0.001): "TB/s", ("GB/s", 1000.0): "MB/s", ("TFLOP/s", 0.001): "PFLOP/s",
               ("TFLOP/s", 1000.0): "GFLOP/s", ("%", 0.01): "a fraction of 1", ("%", 100.0): "hundredths of a percent"}


def unit_slip(part: str, said: float, key: float, unit: str, factor: float) -> str:
    meant = LADDER_UNIT.get((unit, factor))
    times = f"{factor:,.0f}× the" if factor >= 1 else f"1/{1 / factor:,.0f} of the"
    mean = (f"did you mean {num(said)} {meant}, which is {num(key)} {unit}?" if meant
            else f"the trace says {num(key)} {unit}.")
    return f"Half credit: {num(said)} {unit} is {times} trace's {num(key)} {unit}, a unit slip: {mean}"


def pattern_right(cause: str) -> str:
    return f"Yes: {PATTERN[cause]}."


def pattern_unmeasured(cause: str, ev: str) -> str:
    return f"Half credit: the right shape, {PATTERN[cause]}, with no size read off the lane ({ev})."


def pattern_sized(cause: str, ev: str) -> str:
    return (f"Most of it: the size you read off the lane is the right gaps' ({ev}); say what they are: "
            f"{PATTERN[cause]}.")


def pattern_with_other(cause: str, others: set) -> str:
    return (f"Most of it: the lane holds both, and the gaps the answer is about are {PATTERN[cause]}; keep them apart "
            f"from the {', '.join(label(c) for c in sorted(others))}.")


def pattern_generic(cause: str, ev: str) -> str:
    return (f"Part credit: gaps, true of this trace, but nothing says which kind; the lane shows {PATTERN[cause]} "
            f"({ev}).")


def pattern_wrong(cause: str, ev: str) -> str:
    return f"The GPU lane shows {PATTERN[cause]} ({ev})."


def suspects_feedback(found: list[str], missed: list[str], table: str) -> str:
    if not missed:
        return f"Right: {', '.join(found)}. The table: {table}."
    return (f"Missed {', '.join(missed)}" + (f" (found {', '.join(found)})" if found else "") +
            f". The table: {table}.")


def hotspot_table(rows: list[dict]) -> str:
    return ", ".join(f"{r['name']} {share(r['share'])} ({r['calls']} calls)" for r in rows[:3])


def label(cls: str) -> str:
    return CAUSE_WORDS.get(cls) or REGIME.get(cls) or cls


def bound_right(cls: str, why: str) -> str:
    return f"Right: {label(cls)}; {why}."


def bound_wrong(said: set, cls: str, why: str) -> str:
    heard = " and ".join(label(c) for c in sorted(said)) if said else "nothing the course's vocabulary names"
    return f"You named {heard}; the answer is {label(cls)}: {why}."


def regime_why(regime: str, f_compute: float, f_memory: float, idle_share: float, tflops, gbps, intensity, ridge,
               dtype) -> str:
    if regime == "overhead":
        return f"the device idles {share(idle_share)} of the span, so neither arithmetic nor bytes bound it"
    rate = (f"{num(tflops)} TFLOP/s" if regime == "compute" else f"{num(gbps)} GB/s") if (tflops or gbps) else ""
    ai = f"; its ops average {num(intensity)} FLOP/byte against a {dtype} ridge of {num(ridge)}" \
        if intensity is not None and ridge else ""
    part = f_compute if regime == "compute" else f_memory
    return f"{share(part)} of kernel time is {REGIME[regime]}" + (f" at {rate}" if rate else "") + ai


def evidence_against(numbers_hit: list[dict], argued: set, bound: str) -> str:
    quoted = ", ".join(_quantity(n) for n in numbers_hit)
    return (f"True of the trace ({quoted}), but argued for {' and '.join(label(b) for b in sorted(argued))}: "
            f"evidence supports the bound it is argued for, and the trace's is {label(bound)}.")


def evidence_off_point(numbers_hit: list[dict]) -> str:
    quoted = ", ".join(_quantity(n) for n in numbers_hit)
    return (f"True of the trace ({quoted}), but not what decides the bound: quote the idle share, the cause's "
            f"share or its gaps, or the busy time's top op and its rate against the roof.")


def evidence_score(numbers_hit: list[dict], named: bool) -> str:
    parts = []
    if numbers_hit:
        parts.append(f"it quotes {', '.join(_quantity(n) for n in numbers_hit)} from the trace")
    if named:
        parts.append("it names the bound")
    return ("Supported: " + " and ".join(parts) + ".") if parts else \
        "Quote a number from the trace (a share, a gap median, a rate) and name what it shows."


def _quantity(n: dict) -> str:
    return f"{num(n['value'])}{'' if n['unit'] in ('%', '') else ' '}{n['unit']}"


def evidence_missing(numbers: list[dict]) -> str:
    return ("No number from the trace with its unit, about the quantity it names; it has, for example: "
            f"{', '.join(_quantity(n) for n in numbers[:4])}.")


def _with_unit(x: float, unit: str) -> str:
    return f"{num(x)}{unit}" if unit in ("×", "%") else f"{num(x)} {unit}".rstrip()


def number_feedback(part: str, said: float, key: float, unit: str, score: float) -> str:
    s, k = _with_unit(said, unit), _with_unit(key, unit)
    if score >= 1.0:
        return f"Right: {s} (the trace: {k})."
    if score > 0:
        return f"Near, but not it: {s} against {k} in the trace (within 2×, not within 15%)."
    return f"{s} is off: the trace says {k}."


def number_range(span: tuple, key: float, unit: str, score: float) -> str:
    lo, hi = (_with_unit(v, unit) for v in span)
    k = _with_unit(key, unit)
    if score >= 1.0:
        return f"Right: {lo} to {hi}, both ends within 15% (the trace: {k})."
    if score > 0.5:
        return (f"Most of it: {lo} to {hi}, both ends within 15% of the trace's {k}, but a range this wide is not one "
                "measurement: commit to one.")
    if score > 0:
        return f"Half credit: {lo} to {hi} holds the trace's {k}, but a range is not a measurement: commit to one."
    if span[0] <= key <= span[1]:
        return f"{lo} to {hi} is too wide to pin it down: the trace says {k}."
    return f"{lo} to {hi} is off: the trace says {k}."


def ranges_feedback(found: list[str], missed: list[str], names: tuple[str, str]) -> str:
    if not missed:
        return f"Right: the trace's ranges are {names[0]} and {names[1]}."
    return f"Missing {' and '.join(missed)}: the trace separates {names[0]} (TTFT) from {names[1]} (per token)."


def prefill_regime_why(regime: str, tflops: float | None, count: int | None) -> str:
    """Why the prefill is bound as it is: its rate, and nothing about the decode (another drill asks that)."""
    rate = f" at {tflops:,.0f} TFLOP/s" if tflops else ""
    times = f" over {count} prefills" if count else ""
    return f"the prefill runs{rate}{times} and is {REGIME[regime]}"


def capped(part: str, cap: float, half: bool = False) -> str:
    if half:
        return (f"The {part} is only partly right (a hedge, or an answer next to the right one), and the rest "
                f"follows from it: the score is capped at {cap:.1f}.")
    return f"The {part} is wrong, and the rest follows from it: the score is capped at {cap:.1f}."


def summary(drill_id: str, score: float) -> str:
    return f"{drill_id}: {100 * score:.0f}/100"


# --- drill list / show -------------------------------------------------------------------------------


def toy_source(smell: str, level: str, seed: int, mix: dict, reveal: bool = False) -> str:
    """A toy timeline's source; its smell (the answer) only once graded."""
    if not reveal:
        return f"toy timeline, {level}, seed {seed}" + (f", {len(mix)} causes mixed" if mix else "")
    shares = ", ".join(f"{k} {share(v)}" for k, v in mix.items())
    return f"toy timeline: {smell}, {level}, seed {seed}" + (f", mix {shares}" if shares else "")


def sample_source(trace: str, after: str | None, stripped: bool, reveal: bool = False) -> str:
    """A sample trace's source; its file name (`smell-sync-item`) only once graded."""
    if not reveal:
        return ("a pair of sample traces captured on an H200" if after else "a sample trace captured on an H200") + (
            " (named ranges removed)" if stripped else "")
    return trace + (f" -> {after}" if after else "") + (" (named ranges removed)" if stripped else "")


def shared_source(others: tuple[str, ...]) -> str:
    """A sample other drills show too: neither its name nor theirs (either would carry this answer to them)."""
    n = len(others)
    return f"a sample trace that {n} other drill{' shows' if n == 1 else 's show'} too, so its name stays hidden"


def revealed(source: str) -> str:
    return f"The trace, now that it is graded: {source}."


def span_line(span_ms: float, kernel_busy_ms: float, idle_share: float) -> str:
    busy = kernel_busy_ms / span_ms if span_ms else 0
    return (f"GPU span {duration_us(1e3 * span_ms)}: kernels busy {duration_us(1e3 * kernel_busy_ms)} "
            f"({share(busy)}), the GPU idles {share(idle_share)} of it")


def operator_row(h: dict) -> str:
    return f"  {h['name'][:60]:60s} {100 * h['share']:5.1f}%  {duration_us(h['device_us']):>9}  {h['calls']:7,d} calls"


OVERLAPPING_WALLS = 1.5   # the instances' walls add up to this many times their union: they overlap


def passes_header() -> str:
    return ("the forward passes the trace repeats, found from the ops' shapes (new tokens per sequence: the "
            "embedding's indices, the attention's query or the matmuls' rows; wall: the time a pass adds to the "
            "timeline; times from the first pass's start):")


def pass_row(r: dict) -> str:
    """One run of passes of one kind: where it starts, its new tokens, and each pass's wall as a sample (the
    statistic the question asks is the student's to take); a prompt's pass, the device-to-host copies after it
    (where its first token reaches the host)."""
    n = r["last"] - r["first"] + 1
    which = f"pass {r['first']}" if n == 1 else f"passes {r['first']}–{r['last']} ({n})"
    if r["tokens"] is None and r["by_structure"] == n and r["forward"]:
        what = "no shapes recorded (CUDA-graph replays of one structure, repeated after the prompt's pass)"
    elif not r["forward"]:
        what = "no forward of its own (set-up, or the end of the loop)"
    else:
        batch = f"batch {r['batch']} × " if r["batch"] else ""
        tok = f"{batch}{r['tokens']:,} new token{'s' if r['tokens'] != 1 else ''}" + (" each" if n > 1 else "")
        what = tok + (f" ({r['by_structure']} of them by their structure: CUDA-graph replays record no shapes)"
                      if r["by_structure"] else "")
    ms = lambda x: duration_us(1e3 * x)   # noqa: E731
    walls = r["walls_ms"]
    rows = ["      " + " ".join(f"{w:.3f}" for w in walls[i:i + WALLS_A_ROW]) for i in range(0, n, WALLS_A_ROW)]
    wall = f"wall {ms(walls[0])}" if n == 1 else "walls in ms, in order:\n" + "\n".join(rows)
    home = ("\n      device-to-host copies from the request's first pass on (a token is copied back once its pass's "
            "logits are computed; a copy earlier in the pass is set-up), ending at (ms): "
            + ", ".join(f"{t:.3f}" for t in r["to_host_ms"]) if r.get("to_host_ms") else "")
    return f"  {which:22s} starts {position_ms(r['start_ms']):>9}   {what}; {wall}{home}"


WALLS_A_ROW = 16


def range_row(r: dict) -> str:
    """A named range: its instances, the wall they cover together and their kernels' busy time; a range of a few
    instances, each one's start and end (its wall is read from them); never a statistic of the walls, which the
    drills ask."""
    row = (f"  {r['name'][:32]:32s} ×{r['count']:<5,d} all instances cover {duration_us(r['wall_us']):>9}   "
           f"kernels busy {duration_us(r['kernel_busy_us']):>9}")
    inst = r.get("instances") or []
    if 0 < len(inst) <= RANGE_INSTANCES_LISTED:
        row += "\n    " + "; ".join(f"from {position_ms(s)} to {position_ms(e)}" for s, e in inst)
    if r["count"] > 1 and 1e3 * sum(e - s for s, e in inst) > OVERLAPPING_WALLS * r["wall_us"]:
        # a range's wall runs to its last GPU work: when the host runs ahead (CUDA graphs, async launches) the
        # instances overlap, and one instance's wall is not the time each takes
        row += ("\n    (the instances overlap: the host runs ahead of the GPU, so one instance's wall is not the time "
                "per instance; the wall all of them cover is)")
    return row


def position_ms(t_ms: float) -> str:
    """A time on the drawn timeline (0: the first GPU activity): the host may start before it."""
    return ("−" if t_ms < 0 else "") + duration_us(1e3 * abs(t_ms))


RANGE_INSTANCES_LISTED = 4   # a prefill's few requests are listed one by one; 64 decode steps are not


def grade_row(part: str, score: float, weight: float) -> str:
    return f"  {part:14s} {score:4.2f} × {weight:.2f}  "


def rubric_line(rubric: dict, decisive: str, cap: float) -> str:
    return ("rubric: " + ", ".join(f"{k} {v:.2f}" for k, v in rubric.items()) +
            f"; a wrong {decisive} caps the score at {cap:.1f}")


def sweep_header() -> str:
    return ("the capture's size sweep, timed unprofiled with CUDA events (traces/measurements.json, one call, median); "
            "the drill asks about the traced spans above, which include the profiler's cost per launch:")


def sweep_row(r: dict) -> str:
    # the times only: the ratio at a size is the student's to take (at the pair's own size it is the answer)
    return (f"  {r['n']:>11,} elements  eager {duration_us(r['eager_us']):>10}  "
            f"fused Triton {duration_us(r['triton_us']):>10}  torch.compile {duration_us(r['compile_us']):>10}")


def answer_keys_help(parts: dict) -> list[str]:
    return [f'  {name} = ...   # {doc}' for name, (_, doc) in parts.items()]


def timeline_legend(marks: list[tuple[str, str]] | None) -> str:
    """The terminal timeline's legend: each cause's mark, or (causes hidden) what the shading means."""
    if marks is None:
        return "░ the GPU idles most of the slice, · some of it"
    return "  ".join(f"{m} {c}" for m, c in marks) + "  (lower case: under a third of the slice)"


# --- predictions -------------------------------------------------------------------------------------


def prediction_recorded(pid: int, quantity: str, value: float, unit: str, trace: str | None) -> str:
    where = f"; `tracetriage predictions` measures it from {trace} (once that trace exists)" if trace else \
        f"; attach the measurement with: tracetriage predictions --measure {pid} TRACE"
    return f"prediction {pid} recorded: {quantity} = {num(value)} {unit}{where}"


def calibration(n: int, median_ratio: float | None, within_2x: float | None) -> str:
    if not n:
        return "Calibration: no measured predictions yet."
    return (f"Calibration over {n} measured prediction{'s' if n != 1 else ''}: median measured/predicted "
            f"{median_ratio:.2f}×, {share(within_2x)} within 2×.")


def quantity_calibration(quantity: str, n: int, median_ratio: float | None, within_2x: float | None) -> str:
    """One quantity's line under the calibration: per what-if lever, how its predictions measured up."""
    return f"  {quantity}: {n} measured, median measured/predicted {median_ratio:.2f}×, {share(within_2x)} within 2×."


def attempts_line(n: int, mean: float | None) -> str:
    return f"Drill attempts: {n}" + (f", mean score {100 * mean:.0f}/100." if n else ".")


# --- prefill or decode: the incident (M00.04) ---------------------------------------------------------

PHASE_FIXES = {
    "prefill": "a prefill fix: chunked prefill, prefix caching, faster attention or GEMM kernels for the prompt, "
               "a shorter prompt, more GPUs on the prompt's arithmetic",
    "decode": "a decode fix: CUDA graphs or torch.compile for the decode step, speculative decoding, a bigger "
              "decode batch, weight or KV-cache quantization",
}


def incident_why(phase: str, ttft_ms: float, itl_ms: float, ttft_slo: float, itl_slo: float, over: float,
                 regime: str) -> str:
    return (f"TTFT is {num(ttft_ms)} ms against a {num(ttft_slo)} ms target and per-token latency {num(itl_ms)} ms "
            f"against {num(itl_slo)} ms, so {phase} misses its target by {num(over)}×; {phase} is {REGIME[regime]}")


def refuse_right(other: str, phase: str) -> str:
    return (f"Right: that fix targets {other}, and the ticket is about {phase}: "
            f"it would not move the number product sees.")


def refuse_wrong(said: set, other: str, phase: str) -> str:
    heard = " and ".join(f"a {s} fix" for s in sorted(said)) if said else "no fix the course's vocabulary places"
    return (f"You refused {heard}; the fix to refuse is {PHASE_FIXES[other]}: it targets {other}, and the ticket is "
            f"about {phase}.")


# --- the course's new rungs: M00.01, M00.03, M01.03, M01.04, M01.07 --------------------------------------------

def waste_right(nw: dict) -> str:
    return f"Right: would waste the week: {nw.get('waste', '')}. The fix that buys most: {nw.get('lever', '')}."


def waste_is_the_fix(nw: dict) -> str:
    return f"That is the fix, not the waste: {nw.get('lever', '')}. Would waste the week: {nw.get('waste', '')}."


def waste_wrong(said: set, nw: dict) -> str:
    heard = " and ".join(lever_label(c) for c in sorted(said)) or "no lever the course's vocabulary places"
    return f"You named {heard}; the report says would waste the week: {nw.get('waste', '')}."


def ledger_why(ops: int, eager_gb: float, fused_gb: float, passes: int, chains: int) -> str:
    reads = ("reads its inputs once" if passes == 1
             else f"reads its inputs {passes} times (a reduction the chain uses again)")
    return (f"The ledger: each of {chains:,} chains is {ops} ops, {ops} kernels; eagerly every op reads its inputs and "
            f"writes its output, {num(eager_gb)} GB a call; fused into one kernel it {reads} and writes the result "
            f"once, {num(fused_gb)} GB ({num(eager_gb / fused_gb)}× fewer bytes)")


def ledger_speedup_why(speedup: float, wall: float | None, fuse_ratio: float | None,
                       repeats: float | None = None) -> str:
    measured = f"The pair's spans as shown give {num(speedup)}×"
    if repeats and wall:
        measured += (f" (the median of its repeats, which the drill does not show: {num(repeats)}× profiled, "
                     f"{num(wall)}× unprofiled; either is right)")
    pred = (f"; the fuse lever's replay predicted {num(1 / fuse_ratio)}× from the before trace alone"
            if fuse_ratio else "")
    return measured + pred


def ledger_counted(counted_gb: float) -> str:
    return (f"; the capture's own ledger counts {num(counted_gb)} GB, the minimum (every input read once), which is "
            "right too")


def shapes_why(shapes: tuple[str, str], small: float, large: float, small_regime: str, large_regime: str) -> str:
    return (f"{shapes[0]} reaches {num(small)} TFLOP/s and {shapes[1]} {num(large)} TFLOP/s, "
            f"{num(large / small)}× apart: the small shape is {REGIME.get(small_regime, small_regime)}, "
            f"the large one {REGIME.get(large_regime, large_regime)}; one op, no single speed")


def floor_why(gb_per_token: float, peak_gbps: float, floor_ms: float, per_token_ms: float) -> str:
    return (f"The floor: each token's decode kernels read {num(gb_per_token)} GB (the weights, and the KV cache), "
            f"at the HBM peak of {num(peak_gbps)} GB/s that is {num(floor_ms)} ms; the trace measures "
            f"{num(per_token_ms)} ms, {num(per_token_ms / floor_ms)}× the floor")


def timer_why(variants: tuple[str, str], median: float, spread: float, other_median: float, other_spread: float,
              verdict: str, repeats: int) -> str:
    rel = "they do not overlap: a real difference" if verdict == "real" else \
        "their repeats overlap: within the noise, so no claim either way"
    return (f"over {repeats} unprofiled repeats {variants[0]} takes {num(median)} ms "
            f"(median, spread {num(spread)}%) and {variants[1]} {num(other_median)} ms "
            f"(spread {num(other_spread)}%): {rel}")


def kernel_table_header() -> str:
    return ("the costed ops (roofline: FLOPs and bytes from the ops' shapes, rates over their device time, the "
            "device's peaks):")


def kernel_row(k: dict) -> str:
    """One costed op: its shapes, calls, FLOPs and bytes (all calls), device time, and its rates when shown."""
    from tracetriage.analyzers.model.units import size

    rates = (f"  {num(k['tflops'])} TFLOP/s, {num(k['gbps'])} GB/s" if "tflops" in k else "")
    shapes = f"[{k['shapes']}]"[:36]
    return (f"  {k['name'][:28]:28s} {shapes:36s} {k['dtype'] or '-':5s} ×{k['calls']:<6,d}"
            f"{k['flops'] / 1e9:12,.1f} GFLOP {size(k['bytes']):>10}  {duration_us(k['device_us']):>9}{rates}")


def after_kernel_row(k: dict) -> str:
    """One kernel of a fused pair's after trace: its launches, a call, and the tensors its op is handed."""
    held = ""
    if k.get("tensor_args"):
        # shapes in brackets, as the report's op tables write them ([67108864] float: a size, not a count)
        held = "; its op is handed " + ", ".join(f"[{'x'.join(map(str, d))}] {t}" for d, t in k["tensor_args"]) + \
            " (inputs and outputs alike)"
    return f"  {k['kernel'][:60]:60s} ×{k['launches']:<5d} {num(k['per_call'])} a call{held}"


def device_peaks(peak_tflops: float, dtype: str | None, peak_gbps: float) -> str:
    return f"the device's peaks: {num(peak_tflops)} TFLOP/s ({dtype or 'its dtype'}), {num(peak_gbps)} GB/s of HBM"


def declared_line(declared: dict, peak_gbps: float | None) -> str:
    """What the capture declares about the model: its weights' bytes and the shape its KV cache is made of (not the
    bytes each token reads: the floor would be one division from them); the HBM peak with where it comes from."""
    from tracetriage.analyzers.model.units import size

    parts = []
    if "weight_bytes" in declared:
        parts.append(f"weights {size(declared['weight_bytes'])} (bf16)")
    m = declared.get("model") or {}
    if {"n_layer", "dim", "max_seq"} <= set(m):
        parts.append(f"{m['n_layer']} layers of width {m['dim']:,} ({m.get('n_head', '?')} heads), whose KV cache "
                     f"holds a key and a value of that width per layer for each of up to {m['max_seq']:,} positions "
                     "(bf16)")
    peak = (f"; the device's HBM peak: {num(peak_gbps)} GB/s (the best a kernel here reached: the bandwidth the "
            "floor is taken over)") if peak_gbps else ""
    return "the capture declares: " + ("; ".join(parts) or "nothing about the model's bytes") + peak


def repeats_header(scenario: str, about: str, calls: int | None = None) -> str:
    # a repeat runs the workload `calls` times: its wall is theirs together, not one call's
    each = f"wall ms of each repeat ({calls:,} calls one after another)" if calls else "wall ms of each repeat"
    return f"unprofiled repeats of {scenario} ({about}), {each}:"


def repeats_row(variant: str, runs: list[float]) -> str:
    return f"  {variant:14s} " + "  ".join(f"{r:8.3f}" for r in runs)


def prediction_first(quantity: str, trace: str) -> str:
    return (f"Predict before you look closer (the prediction log keeps your calibration): tracetriage predict "
            f"{quantity} VALUE --why \"...\" --trace {trace}")


def prediction_note(quantity: str, predicted: float, measured: float | None) -> str:
    if measured is None:
        return f"Your prediction: {quantity} = {num(predicted)} (not measurable from this trace)."
    return (f"Your prediction first: {quantity} = {num(predicted)}; the trace measures {num(measured)} "
            f"({num(measured / predicted)}× what you said).")


def no_prediction(quantity: str) -> str:
    return f"No prediction recorded before this answer: next time predict {quantity} first (tracetriage predict)."


def worst_miss(pid: int, quantity: str, predicted: float, measured: float, why: str) -> str:
    r = measured / predicted
    how = f"{num(r)}× more" if r > 1 else f"{num(1 / r)}× less"
    return f"  worst miss: prediction {pid}, {quantity} {num(predicted)} measured {num(measured)} ({how}): \"{why}\""


def unit_slip_warning(quantity: str, predicted: float, measured: float, unit: str, factor: float) -> str:
    kept_out = " It is recorded as given and kept out of the calibration."
    if factor == -100:      # tracetriage.drills.predictions.SAVING_SLIP
        return (f"{quantity} {num(predicted)} looks like the percent saved ({num(predicted)}% less), not the ratio "
                f"the trace measures ({num(measured)}): did you mean {num(1 - predicted / 100)}?{kept_out}")
    if factor == 100 and quantity != "idle_share":
        return (f"{quantity} {num(predicted)} is {num(factor)}× what the trace measures ({num(measured)} {unit}): a "
                f"ratio, not a percent: did you mean {num(predicted / 100)}?{kept_out}")
    if factor == 100:
        return (f"{quantity} {num(predicted)} is {num(factor)}× what the trace measures ({num(measured)}): "
                f"a share is a fraction of 1, did you mean {num(predicted / 100)}?{kept_out}")
    times = f"{num(factor)}×" if factor >= 1 else f"1/{num(1 / factor)}"
    return (f"{quantity} {num(predicted)} {unit} is {times} what the trace measures ({num(measured)} {unit}): a unit "
            f"slip?{kept_out}")


def large_gaps_header() -> str:
    return "the longest idle gaps, and the host call the host was in during each:"


def gap_row(start_us: float, length_us: float, call: str) -> str:
    return f"  at {duration_us(start_us):>9}: {duration_us(length_us):>9} idle, the host in {call or 'no traced call'}"
