"""Diff: explain the change between two traces in time, launches, bytes and idle.

    d = diff_files("traces/chain-eager-large.json.gz", "traces/chain-triton-large.json.gz")
    print("\n".join(d["lines"]))

"It got faster" is never an explanation. The span of a device is its kernel busy
time plus its idle time (split by cause), so the time saved splits exactly into
kernel time saved and idle saved per cause. On top of that the diff measures the
two levers the course names, bytes and launches, and says which one accounts for
the speedup:

bytes       both sides memory-bound, and the speedup matches the byte ratio
            (before bytes / after bytes) within BYTES_TOL;
launches    both sides overhead-bound, and the launch calls changed in the
            direction of the speedup (time follows launch calls there);
<cause>     one idle cause (e.g. launch_overhead) shrank by at least MOST of the
            time saved (or grew by MOST of the time lost);
mixed       none of these;
unchanged   the spans agree within SAME_TOL: there is nothing to explain.

Bytes and FLOPs come from the roofline (ops costed from shapes). A kernel with no
costed op (a hand-written Triton kernel, an Inductor kernel, a CUDA-graph replay)
carries no bytes; when less than COVERAGE_MIN of a side's kernel time is costed,
its bytes come from the capture sidecar (`NAME.meta.json`: bytes_per_call and
kernels_per_call, scaled by the kernels in the trace) when there is one, else the
byte ratio is null and the diff says why.

When the two traces hold a different number of ProfilerStep ranges, every count
and time is compared per profiled step.

Uses only the analyzers' public results (report.Analysis, its roofline and
hotspots); never imports torch.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from analyzers.idle import CAUSES
from analyzers.report import CAUSE_WORDS, Analysis, analyze_file
from analyzers.trace import KERNEL, NONE, TraceError

BYTES_TOL = 0.15      # the speedup "matches" the byte ratio within this relative difference
COVERAGE_MIN = 0.9    # share of kernel time with costed bytes for the roofline's bytes to stand
MOST = 0.5            # an idle cause explains a change when it moved by this share of the time saved
SAME_TOL = 0.03       # spans within this relative difference: unchanged
STEP_RANGE = "ProfilerStep"


# --- one side ---------------------------------------------------------------------------

def _sidecar_bytes(trace_path: str, kernels: int) -> float | None:
    """Bytes the capture declared for this trace: bytes_per_call x calls, calls = kernels / kernels_per_call."""
    p = Path(trace_path)
    for suffix in (".json.gz", ".json"):
        if p.name.endswith(suffix):
            stem = p.name[:-len(suffix)]
            break
    else:
        return None
    try:
        meta = json.loads((p.parent / f"{stem}.meta.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or (meta.get("trace") not in (None, p.name)):
        return None
    m = meta.get("measurements")
    if not isinstance(m, dict):
        return None
    bpc, kpc = m.get("bytes_per_call"), m.get("kernels_per_call")
    if not (isinstance(bpc, (int, float)) and isinstance(kpc, int) and bpc > 0 and kpc > 0):
        return None
    if kernels <= 0 or kernels % kpc:
        return None
    return float(bpc) * (kernels // kpc)


def summarize(a: Analysis) -> dict:
    """The numbers a diff compares, for one analysed trace (totals over the trace)."""
    tr, ev = a.trace, a.trace.ev
    kern = np.flatnonzero(ev.cat == KERNEL)
    launch = tr.launch_of[kern]
    calls = np.unique(launch[launch != NONE])
    graph_calls = sum(1 for c in calls.tolist() if "GraphLaunch" in tr.names[ev.name[c]])
    dur = (ev.end[kern] - ev.start[kern]).astype(np.float64)
    kb = a.roof.kernel_bytes[kern]
    coverage = float(dur[kb > 0].sum() / dur.sum()) if dur.sum() > 0 else 0.0
    roof_bytes = float(sum(p.bytes for p in a.roof.points))
    charged = float(kb.sum())
    flops = float(sum(p.flops for p in a.roof.points))
    if coverage >= COVERAGE_MIN and roof_bytes > 0:
        nbytes, source = roof_bytes, "roofline"
    else:
        nbytes = _sidecar_bytes(tr.path, len(kern))
        source = "sidecar" if nbytes is not None else None
    steps = sum(r.count for r in a.ranges if r.name == STEP_RANGE)
    busy_us = a.kernel_busy_ns / 1e3
    n_calls = int(len(calls))
    return {
        "trace": tr.path, "name": Path(tr.path).name, "device_name": tr.device_name(), "steps": int(steps),
        "span_us": round(a.span_ns / 1e3, 3), "kernel_busy_us": round(busy_us, 3),
        "copy_us": round(a.copy_ns / 1e3, 3), "idle_us": round(a.idle_ns / 1e3, 3),
        "idle_share": round(a.idle_share, 4),
        "idle_by_cause_us": {c: round(a.by_cause_ns.get(c, 0) / 1e3, 3) for c in CAUSES},
        "idle_dominant": a.dominant,
        "kernels": int(len(kern)), "launch_calls": n_calls, "graph_launches": int(graph_calls),
        "span_per_launch_us": round(a.span_ns / 1e3 / n_calls, 3) if n_calls else None,
        "bytes": nbytes, "bytes_source": source, "roofline_bytes": roof_bytes, "charged_bytes": charged,
        "byte_coverage": round(coverage, 4), "flops": flops,
        "achieved_gbps": round(nbytes / (busy_us * 1e3), 1) if nbytes and busy_us > 0 else None,
        "regime": a.verdict.regime, "regime_detail": a.verdict.to_dict(),
        "top_ops": a.hot_ops[:5],
        "caveats": list(a.caveats),
    }


# --- the comparison ---------------------------------------------------------------------

def _ratio(b: float | None, a: float | None) -> float | None:
    if b is None or a is None or not a > 0 or not b > 0:
        return None
    return b / a


def _rnd(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(float(x), nd)


def diff_analyses(before: Analysis, after: Analysis) -> dict:
    for side in (before, after):
        if not side.devices:  # a CPU-only trace has no GPU span to compare
            raise TraceError(f"{side.trace.path}: no GPU activity in this trace, so there is nothing to compare "
                             "(a CPU-only capture?); diff two traces captured with CUDA activity")
    b, a = summarize(before), summarize(after)
    caveats: list[str] = []
    per_step = b["steps"] > 0 and a["steps"] > 0 and b["steps"] != a["steps"]
    if (b["steps"] > 0) != (a["steps"] > 0):
        has = b if b["steps"] else a
        caveats.append(f"only {has['name']} has {STEP_RANGE} ranges ({has['steps']}), so whole traces are compared; "
                       "profile the same number of steps for a fair comparison")
    db, da = (b["steps"], a["steps"]) if per_step else (1, 1)
    if b["device_name"] != a["device_name"]:
        caveats.append(f"the traces come from different devices ({b['device_name'] or 'unnamed'} vs "
                       f"{a['device_name'] or 'unnamed'}): the change mixes the hardware with the code")

    span_b, span_a = b["span_us"] / db, a["span_us"] / da
    busy_b, busy_a = b["kernel_busy_us"] / db, a["kernel_busy_us"] / da
    speedup = span_b / span_a if span_a > 0 else None
    byte_ratio = _ratio(b["bytes"] / db, a["bytes"] / da) if b["bytes"] and a["bytes"] else None
    launch_ratio = _ratio(b["launch_calls"] / db, a["launch_calls"] / da)
    kernel_ratio = _ratio(b["kernels"] / db, a["kernels"] / da)
    flop_ratio = _ratio(b["flops"] / db, a["flops"] / da)
    idle_change = {c: round(a["idle_by_cause_us"][c] / da - b["idle_by_cause_us"][c] / db, 3) for c in CAUSES}
    saved = span_b - span_a
    out = {
        "before": b, "after": a,
        "per_step": per_step, "steps": {"before": b["steps"], "after": a["steps"]},
        "speedup": _rnd(speedup), "byte_ratio": _rnd(byte_ratio), "launch_ratio": _rnd(launch_ratio),
        "kernel_ratio": _rnd(kernel_ratio), "flop_ratio": _rnd(flop_ratio),
        "time_saved_us": round(saved, 3), "busy_change_us": round(busy_a - busy_b, 3),
        "idle_change_us": idle_change,
        "top_ops_change": _top_ops_change(b, a, db, da),
        "caveats": caveats,
    }
    out["explained_by"] = _explain(out, b, a)
    out["lines"] = _lines(out, b, a, span_b, span_a, busy_b, busy_a, db, da)
    return out


def diff_files(before: str | Path, after: str | Path) -> dict:
    """Analyse both traces and explain the change. A bad path or trace raises TraceError."""
    return diff_analyses(analyze_file(before), analyze_file(after))


def _top_ops_change(b: dict, a: dict, db: int, da: int) -> list[dict]:
    names = list(dict.fromkeys([o["name"] for o in b["top_ops"]] + [o["name"] for o in a["top_ops"]]))
    tb = {o["name"]: o["device_us"] / db for o in b["top_ops"]}
    ta = {o["name"]: o["device_us"] / da for o in a["top_ops"]}
    rows = [{"name": n, "before_us": _rnd(tb.get(n), 1), "after_us": _rnd(ta.get(n), 1)} for n in names]
    return sorted(rows, key=lambda r: -max(r["before_us"] or 0, r["after_us"] or 0))


def _same_direction(ratio: float | None, speedup: float) -> bool:
    """A ratio (before/after) that moved the way the speedup did, by more than SAME_TOL."""
    if ratio is None:
        return False
    return (speedup > 1 and ratio > 1 + SAME_TOL) or (speedup < 1 and ratio < 1 - SAME_TOL)


def _cause_share(d: dict) -> tuple[str | None, float]:
    """The idle cause that moved most in the direction of the change, and its share of the time saved."""
    saved = d["time_saved_us"]
    if saved == 0:
        return None, 0.0
    # Time saved is positive for a speedup; a cause contributes by shrinking (its change is negative).
    contrib = {c: -ch / saved for c, ch in d["idle_change_us"].items()}
    cause = max(contrib, key=contrib.get)
    return (cause, contrib[cause]) if contrib[cause] > 0 else (None, 0.0)


def _explain(d: dict, b: dict, a: dict) -> str:
    s = d["speedup"]
    if s is None:
        return "mixed"
    if abs(s - 1) <= SAME_TOL:
        return "unchanged"
    br = d["byte_ratio"]
    if br is not None and b["regime"] == "memory" and a["regime"] == "memory" and abs(s / br - 1) <= BYTES_TOL:
        return "bytes"
    if b["regime"] == "overhead" and a["regime"] == "overhead" and _same_direction(d["launch_ratio"], s):
        return "launches"
    cause, share = _cause_share(d)
    if cause is not None and share >= MOST:
        return cause
    return "mixed"


# --- the sentences ------------------------------------------------------------------------

def _t(us: float) -> str:
    us = abs(us)
    if us < 1000:
        return f"{us:.1f} µs"
    return f"{us / 1e3:.2f} ms" if us < 10_000 else f"{us / 1e3:.1f} ms"


def _b(n: float) -> str:
    if n >= 1e9:
        return f"{n / 1e9:.2f} GB"
    if n >= 1e6:
        return f"{n / 1e6:.1f} MB"
    return f"{n / 1e3:.1f} kB"


def _x(r: float) -> str:
    """A ratio before/after as 'N× fewer', 'N× more' or 'about the same'."""
    if abs(r - 1) <= SAME_TOL:
        return "about the same"
    return f"{r:.2f}× fewer" if r >= 1 else f"{1 / r:.2f}× more"


def _speed(s: float) -> str:
    return f"{s:.2f}× speedup" if s >= 1 else f"{1 / s:.2f}× slowdown"


def _signed(us: float) -> str:
    return ("−" if us < 0 else "+") + _t(us)


def _idle_causes(d: dict, k: int = 3) -> str:
    moved = sorted(((c, x) for c, x in d["idle_change_us"].items() if abs(x) >= 0.5), key=lambda cx: -abs(cx[1]))
    return ", ".join(f"{CAUSE_WORDS[c]} {_signed(x)}" for c, x in moved[:k])


def _lines(d: dict, b: dict, a: dict, span_b, span_a, busy_b, busy_a, db, da) -> list[str]:
    s = d["speedup"]
    dev = b["device_name"] if b["device_name"] == a["device_name"] else f"{b['device_name']} / {a['device_name']}"
    scope = f" per profiled step ({b['steps']} vs {a['steps']} steps)" if d["per_step"] else ""
    change = "the after trace has no GPU activity" if s is None else f"a {_speed(s)}"
    l1 = (f"Diff: {b['name']} → {a['name']} on {dev}: the GPU span went from {_t(span_b)} to {_t(span_a)}{scope}, "
          f"{change}.")

    idle_b, idle_a = b["idle_us"] / db, a["idle_us"] / da
    causes = _idle_causes(d)
    top_b = b["top_ops"][0] if b["top_ops"] else None
    top_a = a["top_ops"][0] if a["top_ops"] else None
    tops = ""
    if top_b and top_a:
        tops = (f"; the top op was {top_b['name']} ({100 * top_b['share']:.0f}%) and is now "
                f"{top_a['name']} ({100 * top_a['share']:.0f}%)") if top_b["name"] != top_a["name"] else \
            f"; {top_a['name']} stays the top op ({100 * top_b['share']:.0f}% → {100 * top_a['share']:.0f}%)"
    l2 = (f"Time: the span changed by {_signed(-d['time_saved_us'])} = kernel busy {_signed(busy_a - busy_b)} "
          f"({_t(busy_b)} → {_t(busy_a)}) + idle {_signed(idle_a - idle_b)} "
          f"({100 * b['idle_share']:.0f}% → {100 * a['idle_share']:.0f}% of the span"
          + (f": {causes}" if causes else "") + f"){tops}.")

    lr, br = d["launch_ratio"], d["byte_ratio"]
    calls = f"{b['launch_calls'] / db:,.0f} → {a['launch_calls'] / da:,.0f} launch calls"
    if lr is not None:
        calls += f" ({_x(lr)})"
    calls += f" for {b['kernels'] / db:,.0f} → {a['kernels'] / da:,.0f} kernels"
    if a["graph_launches"] or b["graph_launches"]:
        calls += f", {b['graph_launches'] / db:,.0f} → {a['graph_launches'] / da:,.0f} of the calls CUDA-graph launches"
    if b["span_per_launch_us"] and a["span_per_launch_us"]:
        calls += f", {_t(b['span_per_launch_us'])} → {_t(a['span_per_launch_us'])} of span per launch call"
    if br is not None:
        src = [x["name"] for x in (b, a) if x["bytes_source"] == "sidecar"]
        note = (f"; {' and '.join(src)}: bytes declared by the capture sidecar, "
                "its kernels have no costed op in the trace") if src else ""
        byts = f"bytes {_b(b['bytes'] / db)} → {_b(a['bytes'] / da)} ({_x(br)}{note})"
    else:
        short = list({x["name"]: x for x in (b, a) if x["bytes"] is None}.values())
        byts = "bytes not comparable: " + "; ".join(
            f"only {100 * x['byte_coverage']:.0f}% of {x['name']}'s kernel time has a costed op "
            "(CUDA-graph replays and Triton/Inductor kernels carry no shapes) and no capture sidecar declares its bytes"
            for x in short)
    l3 = f"Launches and bytes: {calls}; {byts}; {b['regime']}-bound → {a['regime']}-bound."

    l4 = _explanation_line(d, b, a)
    lines = [l1, l2, l3, l4]
    if d["caveats"]:
        lines.append("Caveat: " + "; ".join(d["caveats"]) + ".")
    return lines


def _explanation_line(d: dict, b: dict, a: dict) -> str:
    s, br, lr, how = d["speedup"], d["byte_ratio"], d["launch_ratio"], d["explained_by"]
    saved = d["time_saved_us"]
    if how == "unchanged":
        return f"Explained: nothing to explain, the spans agree within {100 * SAME_TOL:.0f}% ({s:.2f}×)."
    if how == "bytes":
        gap = 100 * abs(s / br - 1)
        share = f"{100 / br:.0f}% of the bytes" if br >= 1 else f"{1 / br:.2f}× the bytes"
        busy = b["kernel_busy_us"] / max(a["kernel_busy_us"], 1e-9)
        kt = (f"kernel time fell {busy:.2f}× against the bytes' {br:.2f}×" if br >= 1 else
              f"kernel time grew {1 / busy:.2f}× against the bytes' {1 / br:.2f}×")
        rate = (f" at {b['achieved_gbps']:.0f} → {a['achieved_gbps']:.0f} GB/s"
                if b["achieved_gbps"] and a["achieved_gbps"] else "")
        causes = _idle_causes(d, 2)
        rest = f"; the rest is the idle change ({causes})" if causes and gap >= 0.5 else ""
        return (f"Explained by bytes: it moves {share} and the {_speed(s)} matches that within {gap:.0f}%: "
                f"{kt}, both memory-bound{rate}{rest}.")
    if how == "launches":
        pb, pa = b["span_per_launch_us"], a["span_per_launch_us"]
        cost = ""
        if pb and pa and abs(pa / pb - 1) > BYTES_TOL:
            cost = (f"; each launch call costs {_t(pa)} of span instead of {_t(pb)}, hence {s:.2f}× and not "
                    f"{lr:.2f}×")
        bytes_note = (f"; bytes are no lever here ({_x(br)} bytes, while kernels are busy only "
                      f"{100 * b['kernel_busy_us'] / b['span_us']:.0f}% → {100 * a['kernel_busy_us'] / a['span_us']:.0f}% "
                      "of the span)") if br is not None else ""
        return (f"Explained by launches: both are overhead-bound (the GPU idles {100 * b['idle_share']:.0f}% and "
                f"{100 * a['idle_share']:.0f}% of the span), so time follows launch calls: {_x(lr)} of them"
                f"{cost}{bytes_note}.")
    if how in CAUSE_WORDS:
        ch = d["idle_change_us"][how]
        share = -ch / saved
        extra = ""
        if how == "launch_overhead" and lr is not None:
            same = d["kernel_ratio"] is not None and abs(d["kernel_ratio"] - 1) <= 0.1
            extra = (f"; {_x(lr)} launch calls" + (" for the same kernels" if same else "")
                     + (" (CUDA-graph replays)" if a["graph_launches"] > b["graph_launches"] else ""))
        verb = "shrank" if ch < 0 else "grew"
        speed = "saved" if saved > 0 else "lost"
        return (f"Explained by {CAUSE_WORDS[how]}: its idle {verb} by {_t(ch)}, {100 * share:.0f}% of the "
                f"{_t(saved)} {speed}{extra}; regime {b['regime']} → {a['regime']}.")
    cause, share = _cause_share(d)
    parts = []
    if br is not None:
        parts.append(f"bytes {_x(br)} against a {_speed(s)}")
    if lr is not None:
        parts.append(f"launch calls {_x(lr)}")
    if cause is not None:
        parts.append(f"{CAUSE_WORDS[cause]} idle moved by {100 * share:.0f}% of the time {'saved' if saved > 0 else 'lost'}")
    parts.append(f"kernel busy time {_signed(d['busy_change_us'])}")
    return (f"Explained by a mix: no single lever accounts for it ({'; '.join(parts)}; regime "
            f"{b['regime']} → {a['regime']}).")
