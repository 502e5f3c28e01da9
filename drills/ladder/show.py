"""What `drill show` prints for the ladder's kinds beside the timeline: what the question is built on and what the key
is computed from, never the key (no verdict, no view-or-copy, no occupancy, no intensity).

`info(drill)` is the JSON `drill show --json` adds; `lines(drill)` the text the terminal and the dashboard's
Drills page print.
"""
from __future__ import annotations

from tracetriage.drills import evidence
from tracetriage.drills.bank import Drill
from tracetriage.drills.ladder import facts
from tracetriage.drills.ladder import words as lw

READS = {
    "view_copy": "each op_NN range's [memory] events in the trace (profile_memory=True): an op whose range leaves "
                 "new storage copies, one that leaves none is a view (or the tensor itself)",
    "bytes_ledger": "each line_N range's [memory] events (the storage a line keeps, its temporaries), the copies it "
                    "launches, and its wall (from its start to the end of its GPU work)",
    "occupancy": "the kernel's launch arguments and the device's limits per SM (resident blocks: the grid's blocks "
                 "over the SMs, at most the least of the thread, block, register and shared-memory limits; occupancy: "
                 "their warps over the SM's), its median "
                 "time, and its bytes and FLOPs per launch against the peaks",
    "transpose": "the first trace's consumer's Input Strides (the operand its walk reads a row apart, and its 32-byte "
                 "sectors), and the two traces' kernel time",
    "ridge": "each kernel's FLOPs over its bytes against each card's ridge for the kernel's dtype (peak FLOP/s over "
             "peak bytes/s, dense, from the datasheets named)",
    "intensity": "the decode step's matmuls: their FLOPs over the weight bytes they read; and each card's ridge for "
                 "the weights' dtype",
}


def info(d: Drill) -> dict:
    k = d.kind
    out: dict = {"the_key_reads": READS[k]}
    captured = facts.capture_facts(d.trace)
    if k == "view_copy":
        out["ops"] = [{"range": o["range"], "code": o["code"]} for o in captured.get("ops", [])]
        out["sources"] = {name: {x: s[x] for x in ("shape", "dtype", "contiguous")}
                          for name, s in captured.get("sources", {}).items()}
    elif k == "bytes_ledger":
        out["inputs"] = (d.params or {}).get("inputs")
        # where each line's range starts and ends on the timeline: its wall is read from them (the line that hurts is
        # the question; a wall per line would be its answer printed)
        where = {r["name"]: r["instances"][0] for r in evidence.facts(d.trace_path()).ranges if r["instances"]}
        out["lines"] = [{"range": f"line_{i}", "code": ln["code"], "shape": ln.get("shape"),
                         "from_to_ms": where.get(f"line_{i}")}
                        for i, ln in enumerate(captured.get("lines", []), 1)]
        out["params"] = captured.get("params", {})
    elif k == "occupancy":
        x = facts.kernel_launch(d.trace_path(), d.trace)
        out["kernel"] = {f: x[f] for f in ("kernel", "launches", "median_us", "grid", "block", "regs", "shared",
                                           "flops", "bytes", "cost_source", "dtype", "peak_gbps", "peak_tflops",
                                           "peaks_source", "device")}
    elif k == "transpose":
        after = facts.capture_facts(d.after or "")
        out["code"] = {"first": captured.get("code"), "second": after.get("code")}
        out["consumers"] = {"first": captured.get("consumers", 1), "second": after.get("consumers", 1)}
        out["ops"] = {"first": _reads(d.trace_path()), "second": _reads(d.after_path())}
    elif k == "ridge":
        ops = facts.costed_ops(d.trace_path())[:6]
        codes = [o["code"] for o in captured.get("ops", [])]
        out["kernels"] = [{"id": f"k{i}", **{f: o[f] for f in ("name", "shapes", "dtype", "calls", "flops", "bytes")},
                           "code": codes[i - 1] if len(codes) == len(ops) else None} for i, o in enumerate(ops, 1)]
        out["cards"] = facts.cards(list((d.params or {}).get("cards", [])), facts.device_name(d.trace_path()))
    elif k == "intensity":
        m = facts.decode_matmuls(d.trace_path())
        out["decode"] = {f: m[f] for f in ("matmuls", "steps", "params_per_step", "batch", "dtype")}
        out["cards"] = facts.cards(list((d.params or {}).get("cards", [])), facts.device_name(d.trace_path()))
    return out


def _reads(path) -> list[dict]:
    """Each distinct op (name and operands) that reads tensors, with how many times it ran."""
    if path is None:
        return []
    import statistics

    out: list[dict] = []
    times: list[list[float]] = []
    for o in facts.layout_facts(path)["ops"]:
        row = {"op": o["op"], "kind": o["kind"], "reads": [{f: r[f] for f in ("arg", "dims", "strides", "dtype")}
                                                           for r in o["reads"]]}
        same = next((i for i, x in enumerate(out) if {k: x[k] for k in row} == row), None)
        if same is not None:
            out[same]["calls"] += 1
            times[same].append(o["kernel_us"])
        else:
            out.append({**row, "calls": 1})
            times.append([o["kernel_us"]])
    # each op's kernel time a call (the median of its calls): the verdict weighs the two traces' kernel time, which
    # a timeline reader measures on the kernels' bars
    for row, t in zip(out, times):
        row["kernel_us"] = round(statistics.median(t), 1)
    return out


def lines(d: Drill, shown: dict | None = None) -> list[str]:
    x = shown if shown is not None else info(d)
    k = d.kind
    out: list[str] = []
    if k == "view_copy":
        out.append(lw.show_sources(x["sources"]))
        out.append(lw.show_code_header("op_NN range"))
        out += [lw.show_code_row(o["range"], o["code"]) for o in x["ops"]]
    elif k == "bytes_ledger":
        if x.get("inputs"):
            out.append(f"its inputs: {x['inputs']}")
        if x["params"]:
            out.append(lw.show_params(x["params"]))
        out.append(lw.show_code_header("line_N range"))
        out += [lw.show_code_row(ln["range"], ln["code"] + (f"   # shape {tuple(ln['shape'])}" if ln["shape"]
                                                            else "")) + lw.show_line_span(ln.get("from_to_ms"))
                for ln in x["lines"]]
    elif k == "occupancy":
        out += lw.show_launch(x["kernel"])
    elif k == "transpose":
        for which in ("first", "second"):
            code = (x["code"][which] or "").replace("\n", "; ")
            n = x.get("consumers", {}).get(which, 1)
            out.append(f"the {which} trace runs: {code}" + (f"   (the add {n} times, on one x)" if n > 1 else ""))
            out += [lw.show_op_reads(o) for o in x["ops"][which]]
        out.append(lw.WALK_RULE)
    elif k == "ridge":
        out.append("the six kernels (FLOPs and bytes a call, from their shapes):")
        out += [lw.show_kernel(i, o, o.get("code")) for i, o in enumerate(x["kernels"], 1)]
        out.append("the four cards (the trace's own first):")
        out += [lw.show_card(c) for c in x["cards"]]
    elif k == "intensity":
        out.append(lw.show_decode(x["decode"]))
        out.append("the four cards (the trace's own first):")
        out += [lw.show_card(c) for c in x["cards"]]
    out.append(lw.show_reads_key(x["the_key_reads"]))
    return out
