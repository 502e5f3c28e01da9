"""The ladder drills' words: the feedback of each part (in bytes, launches and roofs) and what `drill show` prints."""
from __future__ import annotations

from tracetriage.analyzers.model.units import duration_us, num, size

LABEL = {"lever": "the lever", "sideshow": "a sideshow", "harm": "active harm", "worth": "worth it",
         "not_worth": "not worth it", "strides": "strides over one storage", "shape": "the shape"}


def label(cls: str) -> str:
    return LABEL.get(cls, cls)


def names(xs) -> str:
    xs = list(xs)
    return ", ".join(xs) if xs else "none"


# --- sets of names (ops, lines, kernels, cards, operands) ------------------------------------------------------

def set_right(what: str, key: list, why: str) -> str:
    return f"Right: {what} {names(key)}. {why}"


def set_partly(what: str, said: set, key: list, missed: list, extra: list, why: str) -> str:
    parts = []
    if missed:
        parts.append(f"missed {names(missed)}")
    if extra:
        parts.append(f"named {names(extra)}, which {'are' if len(extra) > 1 else 'is'} not")
    return f"You said {names(sorted(said))}; {what} {names(key)} ({'; '.join(parts)}). {why}"


def set_hedged(what: str, lead: set, other: set, key: list, credit: float, why: str) -> str:
    lean = ("a hedge that leans to the right one" if credit >= 0.5
            else "a hedge (in the part that decides, it caps the score at 0.6)")
    return (f"You offered {names(sorted(lead))} or {names(sorted(other))}: {lean} earns {credit:g}; {what} "
            f"{names(key)}; commit to one. {why}")


def sectors_hedged(credit: float) -> str:
    return f"You offered no extra sectors or some: a hedge of two answers earns {credit:g}; commit to one."


def set_unread(what: str, key: list, why: str) -> str:
    return f"No name this drill knows in the answer; {what} {names(key)}. {why}"


# --- M01.02 view or copy ------------------------------------------------------------------------------------------

def range_evidence(rows: list[dict], wanted: list[str]) -> str:
    """What the trace shows for some ranges: each one's new storage, or that it allocates nothing."""
    by = {r["name"]: r for r in rows}
    out = []
    for n in wanted:
        r = by.get(n)
        if r is None:
            continue
        if r["view"]:
            out.append(f"{n} allocates nothing")
        else:
            gpu = f", {r['kernels']} kernel{'s' if r['kernels'] != 1 else ''}" if r["kernels"] else ""
            out.append(f"{n} keeps {size(r['kept_bytes'])} of new storage{gpu}")
    return "; ".join(out)


def view_copy_why(rows: list[dict], copies: list[str], wrong: list[str]) -> str:
    shown = (wrong or copies)[:6]
    return f"The [memory] events of each range: {range_evidence(rows, shown)}."


def copy_bytes_why(mb: float, n: int) -> str:
    return f"The {n} copies keep {num(mb)} MB of new storage between them; every view keeps 0."


def rule_right() -> str:
    return ("Right: a view is new shape, strides and offset over the same storage; an op copies when no strides "
            "over that storage can say its result (a reorder after a transpose, a gather, a dtype change, a repeat), "
            "and .contiguous() or .reshape() copy only then.")


def rule_wrong(said: str) -> str:
    return (f"{said}: the rule is about strides, not shapes: an op is a view when its result is new shape, strides "
            "and offset over its input's storage (x.t(), x.narrow(), x.expand(), x.view(...) of a contiguous x), and "
            "copies when no strides can say it (x.t().reshape(-1), x[idx], x.flip(0)); .contiguous() of an already "
            "contiguous tensor is the tensor itself.")


# --- M01.01 the byte ledger ------------------------------------------------------------------------------------------

def ledger_table(rows: list[dict]) -> str:
    return "; ".join(f"{r['name']} {'view' if r['view'] else size(r['kept_bytes'])}"
                     + (f" (+{size(r['temp_bytes'])} temporary)" if r["temp_bytes"] >= 1000 else "")
                     + (f", {size(r['copy_bytes'])} copied" if r["copy_bytes"] else "")
                     + f", {duration_us(r['wall_us'])}" for r in rows)


def new_bytes_why(rows: list[dict]) -> str:
    return f"The ledger, line by line (kept storage, temporaries, copies, wall): {ledger_table(rows)}."


def hurts_why(rows: list[dict], slowest: str) -> str:
    r = next(x for x in rows if x["name"] == slowest)
    where = (f"{size(r['copy_bytes'])} copied in {duration_us(r['copy_us'])}" if r["copies"] else
             f"{r['kernels']} kernel{'s' if r['kernels'] != 1 else ''} busy {duration_us(r['kernel_us'])}"
             if r["kernels"] else f"{duration_us(r['host_us'])} on the host")
    return (f"{slowest} takes {duration_us(r['wall_us'])} of wall ({where}); the bytes a line keeps are not its "
            "cost: where they move (host, device, the bus) is.")


# --- M03.01 occupancy ---------------------------------------------------------------------------------------------

def occupancy_why(k: dict, facts: dict) -> str:
    d = facts.get("device") or {}
    warps = d.get("max_threads_per_sm", 2048) // d.get("warp_size", 32)
    per_sm, cap = facts["blocks_per_sm"], facts["resident_blocks"]
    grid = (f"the grid gives each SM {num(per_sm)} block{'' if per_sm == 1 else 's'}" if per_sm < cap else
            f"the {facts['limiter']} cap each SM at {cap} block{'' if cap == 1 else 's'}")
    smem = f"{size(facts['shared'])} of shared memory a block" if facts["shared"] else "no shared memory"
    return (f"{facts['threads_per_block']} threads ({facts['warps_per_block']} warps) a block, {facts['regs']} "
            f"registers a thread, {smem}: {grid}, so "
            f"{num(min(facts['blocks_per_sm'], facts['resident_blocks']) * facts['warps_per_block'])} of {warps} warps "
            f"are resident: {num(k['occupancy_pct'])}%.")


def roof_why(k: dict, facts: dict) -> str:
    unit = k["achieved_unit"]
    peak = facts["peak_tflops"] if unit == "TFLOP/s" else facts["peak_gbps"]
    moved = (f"{num(facts['flops'] / 1e9)} GFLOP" if unit == "TFLOP/s" else f"{size(facts['bytes'])}")
    return (f"{moved} a launch in {duration_us(facts['median_us'])} (median of {facts['launches']}) is "
            f"{num(k['achieved'])} {unit}, {num(100 * k['roof_share'])}% of the {num(peak)} {unit} "
            f"{k['roof']} roof")


def verdict_why(k: dict, facts: dict) -> str:
    head = roof_why(k, facts)
    occ = f"at {num(k['occupancy_pct'])}% occupancy"
    if k["verdict"] == "sideshow" and k["roof_share"] >= 0.6:
        return (f"{head} {occ}: the {k['roof']} roof, not the warps, is what is left; more warps in flight cannot "
                f"pass it")
    if k["verdict"] == "sideshow":
        return f"{head} {occ}: the warps are there already; something else holds this kernel"
    if k["verdict"] == "harm":
        return (f"{head} {occ}, capped by its {facts['limiter']}: more blocks per SM only come from smaller tiles, "
                "and a smaller tile re-reads its inputs more often: more bytes per FLOP, off the compute roof")
    return (f"{head} {occ}: far below both roofs with too few warps resident to hide the memory latency; more "
            f"blocks per SM (or more bytes in flight per thread) is the lever")


def verdict_right(cls: str, why: str) -> str:
    return f"Right: {label(cls)}. {why}."


def verdict_wrong(said: set, cls: str, why: str) -> str:
    heard = " and ".join(label(c) for c in sorted(said)) if said else "none of lever, sideshow or harm"
    return f"You said {heard}; the trace says {label(cls)}: {why}."


def verdict_near(said: str, cls: str, credit: float, why: str) -> str:
    return (f"Part of it ({credit:g}): you said {label(said)}; the trace says {label(cls)}. Right that raising it is "
            f"not the lever; what raising it would cost is the other half: {why}.")


def verdict_conditional(cls: str, credit: float, why: str) -> str:
    return (f"Most of it ({credit:g}): {label(cls)} for the case in the trace, the other verdict only under a "
            f"condition it does not meet; the trace decides the case, so say it: {why}.")


def verdict_both(cls: str, said: set) -> str:
    return f"Half credit: you said {label(cls)} but also {', '.join(label(c) for c in sorted(said))}; commit to one."


def verdict_hedged(cls: str, said: set, credit: float = 0.0) -> str:
    earns = (f"a hedge that leans to the right one earns {credit:g}" if credit >= 0.5 else
             f"a hedge earns {credit:g} and, in the part that decides, caps the score at 0.6" if credit
             else "a hedge earns what a wrong answer earns")
    return f"You offered {label(cls)} or {' or '.join(label(c) for c in sorted(said))}: {earns}; commit to one."


# --- M03.02 the transpose tax ---------------------------------------------------------------------------------------

def strided_why(k: dict) -> str:
    if k.get("transposed_free"):
        return (f"{k['consumer']} takes the transposed operand as a flag (cuBLAS reads op(B) = B^T in tiles): no "
                "operand is read against its layout, the transpose is free")
    if not k["strided"]:
        return "every operand is read along its own layout"
    ops = k["operands"]
    return (f"the kernel walks its output in the layout of its first full-size operand ({ops[0]}'s, as written), so "
            f"{names(k['strided'])} is read against its layout: neighbouring threads read addresses a row apart, "
            f"one 32-byte sector each for one element")


def sectors_why(k: dict) -> str:
    if not k["sector_mb"]:
        return "No operand is read strided: no extra sectors."
    return (f"The strided operand holds {num(k['useful_mb'])} MB; read one element per 32-byte sector it asks for "
            f"{num(k['sector_mb'])} MB of sectors at worst ({num(k['sector_mb'] / k['useful_mb'])}×); the L2 keeps "
            "part of them, so the kernel time lands between the two.")


def copy_verdict_why(k: dict, view_us: float | None, costed: list[dict]) -> str:
    """The pair in time: the consumer through the view against the copy and the coalesced consumer, per call."""
    total = (f"in all, {duration_us(k['before_kernel_us'])} of kernels through the view against "
             f"{duration_us(k['after_kernel_us'])} with the copy first")
    if not costed:
        return f"{k['consumer']} reads the transposed operand as a flag, so the copy only adds its own time: {total}"
    c = costed[0]
    lost = (view_us or 0.0) - c["consumer_us"]
    pays = (f"it pays from {max(1, -(-c['copy_us'] // lost)):.0f} consumers on, and {c['consumers']} read it here"
            if lost > 0 else "the strided read costs nothing more, so it never pays")
    return (f"through the view each {k['consumer']} took {duration_us(view_us or 0)}, coalesced after the copy "
            f"{duration_us(c['consumer_us'])}: the strided read loses {duration_us(max(lost, 0))} a call, and the "
            f"copy costs {duration_us(c['copy_us'])} ({size(c['copy_bytes'])} at worst: its source read in sectors, "
            f"its output written): {pays}; {total}")


# --- M00.02 and M01.06 rooflines -----------------------------------------------------------------------------------

def ridge_why(k: dict) -> str:
    pairs = ", ".join(f"{kk} {num(i)}" for kk, i in zip(k["kernels"], k["intensity"]))
    return (f"{k['device']}'s bf16 ridge is {num(k['ridge'])} FLOP/byte (its peak FLOP/s over its peak bytes/s); the "
            f"kernels' intensities (FLOPs over bytes, each against the ridge of its own dtype): {pairs}")


def intensity_why(k: dict) -> str:
    return (f"each weight is read once per step and used in 2 FLOPs per row of the batch: 2 x {k['batch']} FLOPs over "
            f"{num(2 * k['batch'] / k['intensity'])} bytes per {k['dtype']} parameter = {num(k['intensity'])} "
            f"FLOP/byte; with their activations counted too the matmuls reach {num(k['whole_step_intensity'])}")


def placement_why(k: dict) -> str:
    return (f"at {num(k['intensity'])} FLOP/byte the step is above the {k['dtype']} ridge of "
            f"{names(k['compute_bound_on'])} and below the rest ({', '.join(k['cards'])})")


def batch_why(k: dict) -> str:
    return (f"the ridge of {k['cards'][0]} for {k['dtype']} is {num(k['ridge'])} FLOP/byte, and each row of the batch "
            f"adds {num(k['intensity'] / k['batch'])}: {num(k['batch_at_ridge'])} rows")


# --- drill show -------------------------------------------------------------------------------------------------------

def show_code_header(what: str) -> str:
    return f"the code each {what} runs (the capture's own lines):"


def show_code_row(name: str, code: str) -> str:
    return f"  {name:7s} `{code}`"      # code as written, quoted: its digits are the code's, not a count to format


def show_line_span(from_to_ms: list | None) -> str:
    """Where a line's range starts and ends on the drawn timeline (0: the first GPU activity; the host may start
    before it), to its last GPU work: the line's wall is read from them."""
    if not from_to_ms:
        return ""
    pos = lambda t: ("−" if t < 0 else "") + duration_us(1e3 * abs(t))   # noqa: E731
    return f"   (from {pos(from_to_ms[0])} to {pos(from_to_ms[1])})"


def show_sources(sources: dict) -> str:
    return "its inputs: " + "; ".join(f"{k} [{'x'.join(map(str, v['shape']))}] {v['dtype']}" +
                                      ("" if v.get("contiguous", True) else " (not contiguous)")
                                      for k, v in sources.items())


def show_params(params: dict) -> str:
    return "its sizes: " + ", ".join(f"`{k} = {v}`" for k, v in params.items())


def show_reads_key(what: str) -> str:
    return f"the key reads {what}"


def show_launch(k: dict) -> list[str]:
    d = k.get("device") or {}
    lines = [f"the kernel: {k['kernel'][:90]}",
             f"  launched {k['launches']}x, median {duration_us(k['median_us'])}: grid `{tuple(k['grid'])}`, block "
             f"`{tuple(k['block'])}`, {k['regs']} registers a thread, "
             + (f"{size(k['shared'])} of shared memory a block" if k["shared"] else "no shared memory")]
    if d:
        lines.append(f"  the device: {d['name']} (compute {d['capability']}), {d['sms']} SMs, each holding at most "
                     f"{d['max_threads_per_sm']:,} threads, {d['regs_per_sm']:,} registers, "
                     f"{size(d['shared_per_sm'])} of shared memory and 32 blocks")
    src = "from its op's shapes" if k["cost_source"] == "shapes" else \
        "as the capture counted them: no op records this kernel's shapes"
    lines.append(f"  per launch: {num((k['flops'] or 0) / 1e9)} GFLOP and {size(k['bytes'] or 0)} ({src})")
    lines.append(f"  the device's peaks: {num(k['peak_gbps'])} GB/s" + (f", {num(k['peak_tflops'])} TFLOP/s "
                                                                       f"({k['dtype']})" if k['peak_tflops'] else "")
                 + f" ({k['peaks_source']})")
    return lines


# How PyTorch's elementwise and copy kernels walk memory (TensorIterator): what the strided question rests on, stated
# so that a reader of the strides can apply it (two blind teachers read `x.t() + y` without it and named x)
WALK_RULE = ("how the kernels walk: an elementwise op allocates its output in the layout of its first full-size "
             "operand and walks the output in memory order (32 neighbouring threads, 32 neighbouring output "
             "elements); copy_ walks its destination; a matmul reads a transposed operand as a flag (cuBLAS)")


def show_op_reads(o: dict) -> str:
    reads = "; ".join(f"arg {r['arg']} {'x'.join(map(str, r['dims']))} {r['dtype']} strides "
                      f"`({', '.join(map(str, r['strides']))})`" for r in o["reads"])
    calls = o.get("calls", 1)
    took = f"; its kernel {duration_us(o['kernel_us'])} a call (median)" if o.get("kernel_us") is not None else ""
    return f"  {o['op']:14s} x{calls:<3d} {reads}{took}"


def show_card(c: dict) -> str:
    t = c["tflops"]
    return (f"  {c['name']:18s} {num(c['gbps'])} GB/s; bf16 {num(t['bf16'])}, fp16 {num(t['fp16'])}, fp32 "
            f"{num(t['fp32'])}, tf32 {num(t['tf32'])} TFLOP/s dense ({c['sheet']})")


def show_kernel(i: int, o: dict, code: str | None) -> str:
    return (f"  k{i}  {o['name'][:34]:34s} [{o['shapes'][:34]}] {o['dtype']:5s} {num(o['flops'] / 1e9)} GFLOP, "
            f"{size(o['bytes'])} a call" + (f"   `{code}`" if code else ""))


def show_decode(m: dict) -> str:
    return (f"the decode's matmuls: {m['matmuls']} calls over {m['steps']} steps, {num(m['params_per_step'] / 1e9)} B "
            f"weight parameters a step in {m['dtype']}, {m['batch']} row{'s' if m['batch'] != 1 else ''} each (the "
            "batch)")
