"""The one serializer: typed results -> the plain objects that `--json` prints.

Dataclasses become objects in field order, enums their values, tuples lists, numpy
scalars Python numbers. Sentences come from tracetriage.analyzers.voice, never from here.
"""
from __future__ import annotations

import dataclasses
from enum import Enum

import numpy as np

from tracetriage.analyzers.analyses.roofline import RegimeVerdict, RooflinePoint
from tracetriage.analyzers.model.evidence import Evidence
from tracetriage.analyzers.model.verdicts import CAUSES, Construct
from tracetriage.analyzers.output.schema import SCHEMA_VERSION
from tracetriage.analyzers.voice.common import advice
from tracetriage.analyzers.voice.diff import diff_caveats, diff_lines
from tracetriage.analyzers.voice.health import health_json
from tracetriage.analyzers.voice.ranks import own_idle, ranks_caveats, ranks_lines, straggler_reason
from tracetriage.analyzers.voice.report import analysis_caveats, five_lines, next_experiment, regime_bound
from tracetriage.analyzers.voice.said import recorded
from tracetriage.analyzers.voice.whatif import assumption

# Their floats are printed to 4 decimals (ratios, shares, TFLOP/s): the rest are rounded where computed.
_ROUNDED_TO_4 = (RegimeVerdict, RooflinePoint)


def plain(x, nd: int | None = None):
    if isinstance(x, Enum):
        return x.value
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        nd = 4 if isinstance(x, _ROUNDED_TO_4) else nd
        # a field marked metadata={"json": False} feeds the words only (the JSON keeps its keys as they are)
        return {f.name: plain(getattr(x, f.name), nd) for f in dataclasses.fields(x) if f.metadata.get("json", True)}
    if isinstance(x, dict):
        return {(k.value if isinstance(k, Enum) else k): plain(v, nd) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v, nd) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and nd is not None:
        return round(x, nd)
    return x


def _r(x: float, nd: int = 3) -> float:
    return round(float(x), nd)


def evidence(ev: Evidence) -> dict:
    """One cause's evidence, with the cause's one advice text as its first experiment."""
    d = plain(ev)
    del d["cause"]
    head = {k: d.pop(k) for k in ("gaps", "total_us", "median_gap_us", "max_gap_us")}
    return {**head, "first_experiment": advice(ev.cause, ev), **d}


def report(a) -> dict:
    """`tracetriage report --json` for one analysis (docs/json.md's contract, and more)."""
    tr = a.trace
    pk = a.roof.peaks
    with recorded() as said:     # each figure the lines state, with its field (tracetriage.analyzers.voice.said)
        lines = five_lines(a)
    return {
        "schema_version": SCHEMA_VERSION,
        "trace": {"path": tr.path, "events": tr.events_in_file, "device_name": tr.device_name(),
                  "rank": tr.rank, "caveats": analysis_caveats(a)},
        "range": a.range_filter,
        "span_us": _r(a.span_ns / 1e3), "kernel_busy_us": _r(a.kernel_busy_ns / 1e3), "copy_us": _r(a.copy_ns / 1e3),
        # memsets and device-to-device copies are device work (in kernel_busy_us); copy_us is copies over the link
        "memset_us": _r(a.memset_ns / 1e3), "dtod_copy_us": _r(a.dtod_ns / 1e3),
        "idle_us": _r(a.idle_ns / 1e3), "idle_share": _r(a.idle_share, 4),
        "idle": {"by_cause_us": {c.value: _r(ns / 1e3) for c, ns in a.by_cause_ns.items()},
                 "dominant": plain(a.dominant), "gaps": int(sum(len(d.gaps) for d in a.devices)),
                 "evidence": {c.value: evidence(ev) for c, ev in a.evidence.items()},
                 "per_device": [{"device": d.device, "span_us": _r(d.span_ns / 1e3), "idle_us": _r(d.idle_ns / 1e3),
                                 "dominant": plain(d.dominant)} for d in a.devices]},
        "regime": a.verdict.regime.value if a.devices else None,  # no GPU activity: not decidable
        "regime_detail": {**plain(a.verdict), "bound": regime_bound(a)},   # bound: what the Regime line names
        "graph_capture": plain(a.graph_capture),    # CUDA-graph captures in the profile (null: none)
        "hotspots": plain(a.hotspots),
        "top_kernels": plain(a.top_kernels),
        "ranges": [{"name": r.name, "count": r.count, "wall_us": _r(r.wall_us), "median_wall_us": _r(r.median_wall_us),
                    "kernel_busy_us": _r(r.kernel_busy_us), "idle_us": _r(r.idle_us),
                    "idle_by_cause_us": {c.value: _r(x) for c, x in r.idle_by_cause_us.items()},
                    "regime": a.range_verdicts[r.name].regime.value,
                    "idle_dominant": plain(r.idle_dominant)} for r in a.ranges],
        "phases": plain(a.phases) if a.phases else {},
        "framework": _framework(a.framework),
        "steps": steps(a),
        "roofline": plain(a.roof.points[:50]),
        "above_peak": [{**plain(x), "times_peak": round(x.times_peak, 4)} for x in a.above_peak],
        "peaks": ({"name": pk.name, "source": pk.source, "bytes_per_s": pk.bytes_per_s, "flops_per_s": pk.flops_per_s,
                   "sheet": pk.sheet, "limit_bytes_per_s": pk.limit_bytes_per_s(),
                   "limit_flops_per_s": {d: pk.limit_flops(d) for d in pk.flops_per_s},
                   "passed": [plain(x) for x in pk.passed]}
                  if pk else None),
        "lines": lines,
        "claims": [plain(c) for c in said],
        "health": health_json(a.health),      # is the trace whole: every finding, and the Health line when said
        "profiler": _profiler(a.profiler),    # the profiler's own cost and the run without it (null: no replay)
        # the top kernel's occupancy and a transposed copy costed both ways: only where the Regime line speaks of them
        **({"execution": plain(a.execution)} if a.execution is not None else {}),
        "next_experiment": {**next_experiment(a), "kind": a.next_experiment.kind.value,
                            "predicted_ratio": _r(a.next_experiment.lever.predicted_ratio, 4)
                            if a.next_experiment.lever else None,
                            "whatif_lever": a.next_experiment.lever.lever if a.next_experiment.lever else None,
                            "only": a.next_experiment.lever.only if a.next_experiment.lever else None,
                            # what the lever's fix finds in the trace to change (syncs, copies, kernels ...)
                            "acts_on": a.next_experiment.lever.assumption.count
                            if a.next_experiment.lever and a.next_experiment.lever.assumption else None,
                            "baseline_us": _r(a.next_experiment.lever.baseline_ns / 1e3)
                            if a.next_experiment.lever else None,
                            # the ratio the user will see without the profiler (tracetriage.analyzers.whatif.unprofiled)
                            "unprofiled_ratio": _r(a.next_experiment.lever.unprofiled_ratio, 4)
                            if a.next_experiment.lever and a.next_experiment.lever.unprofiled_ratio is not None
                            else None,
                            # beside the straggler: this rank's own fix (null: none, or not a straggler's Next)
                            "own_fix": _own_fix(a.next_experiment.own_fix)},
        **source_lines(a),
    }


def _own_fix(nx) -> dict | None:
    if nx is None:
        return None
    return {"kind": nx.kind.value, "whatif_lever": nx.lever.lever, "predicted_ratio": _r(nx.lever.predicted_ratio, 4)}


def _profiler(p) -> dict | None:
    if p is None:
        return None
    return {"profiled_us": _r(p.profiled_ns / 1e3), "unprofiled_us": _r(p.unprofiled_ns / 1e3),
            "slowdown": _r(p.slowdown, 4), "host_us": _r(p.host_ns / 1e3), "ops": p.ops, "calls": p.calls,
            "idle_share": _r(p.idle_share, 4), "unprofiled_idle_share": _r(p.unprofiled_idle_share, 4),
            "buffer_us": _r(p.buffer_ns / 1e3), "source": p.source,
            "launch_bound_only_under_profiler": p.launch_bound_only_under_profiler, "worth_saying": p.worth_saying}


def _framework(fw) -> list[dict]:
    """Whose code made the idle and the launches: every construct found, most idle first."""
    if fw is None:
        return []
    return [{"construct": x.construct.value, "idle_us": _r(x.idle_ns / 1e3),
             "idle_share": _r(x.idle_ns / fw.idle_ns, 4) if fw.idle_ns else 0.0,
             "by_cause_us": {c.value: _r(ns / 1e3) for c, ns in x.by_cause_ns.items()},
             "launches": x.launches, "calls": x.ranges, "host_us": _r(x.host_ns / 1e3), "names": list(x.names),
             # torch.compile compiling only functions' first compilations: one-time set-up (the claim checker's)
             **({"first_compilations": fw.first_compilations} if x.construct is Construct.COMPILE else {})}
            for x in fw.constructs]


def _step_columns(st, kinds) -> dict:
    """Per step, one list per field (a trace of 2,000 steps stays a small object)."""
    rows = st.steps
    out = {"index": [s.index for s in rows], "start_us": [_r(s.start_ns / 1e3) for s in rows],
           "wall_us": [_r(s.wall_ns / 1e3) for s in rows], "host_start_us": [_r(s.host_start_ns / 1e3) for s in rows],
           "kernels": [s.kernels for s in rows], "kernel_busy_us": [_r(s.kernel_busy_ns / 1e3) for s in rows],
           "idle_us": [_r(s.idle_ns / 1e3) for s in rows],
           "idle_by_cause_us": {c.value: [_r(s.idle_by_cause_ns[c] / 1e3) for s in rows] for c in CAUSES},
           "regular": [s.regular for s in rows], "setup": [s.setup for s in rows],
           # the work queued before the profiled window each step ran, and its own launch calls
           "queued_kernels": [s.queued_kernels for s in rows],
           "queued_busy_us": [_r(s.queued_busy_ns / 1e3) for s in rows],
           "launch_calls": [s.launch_calls for s in rows]}
    if kinds is not None:
        out["kind"] = [k.kind.value for k in kinds]
        out["batch"] = [k.batch for k in kinds]
        out["tokens"] = [k.tokens for k in kinds]
        out["tokens_from"] = [plain(k.source) for k in kinds]
    return out


def _summary(s) -> dict | None:
    if s is None:
        return None
    o = s.outlier
    return {"steps": s.steps, "median_us": _r(s.median_ns / 1e3), "p90_us": _r(s.p90_ns / 1e3),
            "max_us": _r(s.max_ns / 1e3), "max_step": s.max_step, "median_kernel_busy_us": _r(s.median_busy_ns / 1e3),
            "median_idle_us": _r(s.median_idle_ns / 1e3),
            "outlier": None if o is None else {"step": o.step, "ratio": o.ratio, "wall_us": _r(o.wall_ns / 1e3),
                                               "extra_us": _r(o.extra_ns / 1e3), "cause": plain(o.cause),
                                               "gap_us": _r(o.gap_ns / 1e3), "host_op": o.host_op,
                                               "why": plain(o.why), "construct": plain(o.construct),
                                               "own_kernel_busy_us": _r(o.own_busy_ns / 1e3),
                                               "median_own_kernel_busy_us": _r(o.median_own_busy_ns / 1e3),
                                               "queued_kernels": o.queued_kernels,
                                               "queued_busy_us": _r(o.queued_busy_ns / 1e3),
                                               "waited_in": o.waited_in, "waited_us": _r(o.waited_ns / 1e3)}}


def steps(a) -> dict:
    """The iterations (tracetriage.analyzers.analyses.steps) and, where prefill and decode were found from shapes, each
    step's kind: `report --json`'s "steps"."""
    st = a.steps
    if st is None:
        return {}
    inf = a.inference
    return {"found_from": plain(st.found_from), "boundary": plain(st.boundary), "anchor": st.anchor,
            "unit_ops": st.unit_ops, "why_none": plain(st.why_none), "repeats": st.repeats,
            "repeat_op": st.repeat_op, "per_element": st.per_element, "count": len(st.steps),
            "setup_steps": len(st.setup_steps), "setup_us": _r(st.setup_ns / 1e3), "summary": _summary(st.summary),
            "decode_summary": _summary(inf.decode_summary) if inf is not None else None,
            "per_step": _step_columns(st, inf.steps if inf is not None else None)}
def source_lines(a) -> dict:
    """Where in the user's code (a trace with stacks) and the ops Inductor kernels fused: keys of their own,
    so that the objects above keep their shape whether or not the trace has stacks."""
    src = a.source_lines
    return {"stacks": {"recorded": src is not None, "python_events": src.python_events if src else 0},
            "source_lines": {"hotspots": plain(src.hotspots), "kernels": plain(src.kernels),
                             "idle": plain(src.idle), "next": plain(a.next_source)} if src else None,
            "fused_kernels": plain(a.fused_kernels)}


def _side(s) -> dict:
    d = plain(s)
    for k in ("trace_caveats", "warmup", "warmup_share"):
        del d[k]
    return {**d, "caveats": analysis_caveats(s)}


def diff(d) -> dict:
    """`tracetriage diff --json`."""
    out = plain(d)
    for k in ("only_one_side_has_steps", "different_devices", "explained_by"):
        del out[k]
    return {"schema_version": SCHEMA_VERSION, **out, "before": _side(d.before), "after": _side(d.after),
            "caveats": diff_caveats(d),
            "explained_by": d.explained_by, "lines": diff_lines(d)}


def _us(ns: float | None) -> float | None:
    return None if ns is None else round(ns / 1e3, 1)


def _straggler(s) -> dict | None:
    from tracetriage.analyzers.analyses.ranks import NoStraggler

    if isinstance(s, NoStraggler):
        return None
    me = next(x for x in s.stats if x.row.rank == s.rank)
    return {"per_rank": [{"rank": x.row.rank, "collective_per_step_us": _us(x.per_step_med),
                          "collective_total_us": _us(x.row.r.collectives.total_ns), "host_step_us": _us(x.host_step),
                          "gpu_step_us": _us(x.gpu_step)} for x in s.stats],
            "step_us": _us(s.step_ns), "steps_from": sorted({x.row.r.collectives.steps_from for x in s.stats}),
            "threshold_us": _us(s.threshold_ns),
            "outliers": [{(k[:-3] + "_us" if k.endswith("_ns") else k): (_us(v) if k.endswith("_ns") else v)
                          for k, v in plain(n).items() if v is not None} for n in s.outliers],
            "collective_spread_us": _us(s.spread_ns), "rank": s.rank, "basis": s.basis,
            "wait_per_step_us": _us(s.wait_per_step_ns), "host_idle_dominant": plain(me.row.r.dominant),
            "host_idle": own_idle(me.row.r)}


def ranks(rr) -> dict:
    """`tracetriage report DIR --json`."""
    from tracetriage.analyzers.analyses.ranks import NoStraggler

    rows = []
    waits = {w.rank: w for w in rr.peer_waits}
    for r in rr.rows:
        c = r.r.collectives
        w = waits.get(r.rank)
        rows.append({"rank": r.rank, "rank_from": r.how, "file": r.path.name, **r.r.report,
                     "collectives": {"calls": c.calls, "total_us": round(c.total_ns / 1e3, 3),
                                     "steps_from": c.steps_from, "kernels": list(c.kernels),
                                     "per_step_us": [round(x / 1e3, 3) for x in c.per_step_ns],
                                     "peer_wait_us": round(w.wait_ns / 1e3, 3) if w else None}})
    strag = _straggler(rr.straggler)
    reason = straggler_reason(rr.straggler) if isinstance(rr.straggler, NoStraggler) else None
    return {"schema_version": SCHEMA_VERSION, "ranks": rows, "straggler": strag, "straggler_reason": reason,
            "lines": ranks_lines(rr), "caveats": ranks_caveats(rr), "errors": rr.errors}


def whatif(w) -> dict:
    """`tracetriage whatif --json`: levers sorted by predicted span, best first."""
    return {"schema_version": SCHEMA_VERSION, "baseline_us": round(w.baseline_ns / 1e3, 1),
            # the traced work predicted without the profiler's own cost (tracetriage.analyzers.whatif.unprofiled)
            "unprofiled_us": round(w.unprofiled_ns / 1e3, 1) if w.unprofiled_ns is not None else None,
            "levers": [{"lever": p.lever, "predicted_us": round(p.predicted_ns / 1e3, 1),
                        "predicted_ratio": round(p.predicted_ratio, 4), "saving_us": round(p.saving_ns / 1e3, 1),
                        "unprofiled_ratio": round(p.unprofiled_ratio, 4) if p.unprofiled_ratio is not None else None,
                        "assumptions": assumption(p.assumption)} for p in w.levers]}
