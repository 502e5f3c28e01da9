"""The `--json` contract as JSON Schema (draft 2020-12): `tracetriage schema report|diff|whatif` prints it.

Written by hand, as the contract, not generated from the code it checks: every key listed here is
required with its type, and every object stays open (`additionalProperties` is allowed), so a key
added later validates, and a key removed, renamed or retyped does not. tests/test_schema.py validates
every golden `--json` file against it. SCHEMA_VERSION is in every object `--json` prints; CHANGELOG.md
lists each change: a new key bumps the minor version, a removed or changed key the major one.
"""
from __future__ import annotations

from tracetriage.analyzers.model.verdicts import Bound, Cause, Construct, Regime

SCHEMA_VERSION = "1.5"
DIALECT = "https://json-schema.org/draft/2020-12/schema"

# --- building blocks -------------------------------------------------------------------------------

NUM = {"type": "number"}
INT = {"type": "integer"}
STR = {"type": "string"}
BOOL = {"type": "boolean"}


def opt(s: dict) -> dict:
    """s, or null."""
    return {"anyOf": [s, {"type": "null"}]}


def obj(props: dict, optional: dict | None = None) -> dict:
    """An object that must hold `props` (with their types), may hold `optional`, and may hold more."""
    return {"type": "object", "required": sorted(props), "properties": {**props, **(optional or {})},
            "additionalProperties": True}


def arr(items: dict) -> dict:
    return {"type": "array", "items": items}


def by_key(values: dict) -> dict:
    """An object keyed by names (ops, kernels): any key, each value of this shape."""
    return {"type": "object", "additionalProperties": values}


def enum(*values) -> dict:
    return {"enum": list(values)}


CAUSE = enum(*[c.value for c in Cause])
REGIME = enum(*[r.value for r in Regime], "communication")
BOUND = enum(*[b.value for b in Bound], "latency")
PER_CAUSE_US = obj({c.value: NUM for c in Cause})
VERSION = {"type": "string", "pattern": r"^\d+\.\d+$"}

NAME_COUNT = obj({"name": STR, "count": INT})
NAME_TIME = obj({"name": STR, "count": INT, "us": NUM})
HOTSPOT = obj({"name": STR, "device_us": NUM, "share": NUM, "calls": INT, "kernels": INT})
REGIME_DETAIL = obj({"regime": REGIME, "idle_share": NUM, "compute_us": NUM, "memory_us": NUM, "unknown_us": NUM,
                     "comm_us": NUM, "achieved_tflops": opt(NUM), "achieved_gbps": opt(NUM), "intensity": opt(NUM),
                     "ridge": opt(NUM), "dtype": opt(STR), "uncosted_share": NUM, "uncosted_why_us": by_key(NUM)})
SOURCE_LINE = obj({"file": STR, "line": INT, "function": STR, "call": opt(STR), "call_kind": opt(STR),
                   "count": INT, "us": NUM, "call_line": opt(INT)})
SOURCE_LINES = arr(SOURCE_LINE)
FUSED_KERNEL = obj({"kernel": STR, "kind": STR, "aten_ops": arr(STR), "source_nodes": arr(STR),
                    "from_file": opt(STR)})

# --- report ----------------------------------------------------------------------------------------

_EVIDENCE_COMMON = {"gaps": INT, "total_us": NUM, "median_gap_us": NUM, "max_gap_us": NUM, "first_experiment": STR}
EVIDENCE = {
    "launch_overhead": obj({**_EVIDENCE_COMMON, "next_kernel_median_us": NUM, "launch_call_median_us": opt(NUM),
                            "queued_gaps": INT, "launching_ops": arr(NAME_COUNT), "kernels": INT,
                            "kernel_median_us": NUM}),
    "host_work": obj({**_EVIDENCE_COMMON, "host_events": arr(NAME_TIME), "untraced_share": NUM,
                      "threshold_us": NUM, "warmup": arr(obj({"name": STR, "first_call_us": NUM,
                                                               "later_median_us": opt(NUM)}))}),
    "synchronization": obj({**_EVIDENCE_COMMON, "sync_calls": arr(NAME_COUNT), "called_from": arr(NAME_COUNT)}),
    "data_transfer": obj({**_EVIDENCE_COMMON, "copies": arr(obj({"name": STR, "count": INT, "us": NUM, "bytes": INT,
                                                                "gbps": opt(NUM)})),
                          "copy_count": INT, "copy_bytes": INT, "blocking_calls": arr(NAME_COUNT)}),
    "other": obj({**_EVIDENCE_COMMON, "unlinked_gaps": INT}),
}
PHASE = obj({"range": STR, "count": INT, "median_wall_us": NUM, "kernel_busy_us": NUM, "idle_share": NUM,
             "idle_dominant": opt(CAUSE), "regime": REGIME, "verdict": REGIME_DETAIL})

REPORT = obj({
    "schema_version": VERSION,
    "trace": obj({"path": STR, "events": INT, "device_name": opt(STR), "rank": opt(INT), "caveats": arr(STR)}),
    "range": opt(STR),
    "span_us": NUM, "kernel_busy_us": NUM, "copy_us": NUM, "memset_us": NUM, "dtod_copy_us": NUM, "idle_us": NUM,
    "idle_share": NUM, "idle": obj({"by_cause_us": PER_CAUSE_US, "dominant": opt(CAUSE), "gaps": INT,
                 "evidence": obj({}, EVIDENCE),
                 "per_device": arr(obj({"device": INT, "span_us": NUM, "idle_us": NUM, "dominant": opt(CAUSE)}))}),
    "regime": opt(REGIME),
    "regime_detail": REGIME_DETAIL,
    "hotspots": arr(HOTSPOT),
    "top_kernels": arr(HOTSPOT),
    "ranges": arr(obj({"name": STR, "count": INT, "wall_us": NUM, "median_wall_us": NUM, "kernel_busy_us": NUM,
                       "idle_us": NUM, "idle_by_cause_us": PER_CAUSE_US, "regime": REGIME,
                       "idle_dominant": opt(CAUSE)})),
    "phases": obj({}, {"prefill": PHASE, "decode": PHASE, "ttft_us": NUM, "per_token_us": NUM,
                       "tokens_per_prefill": INT}),
    "framework": arr(obj({"construct": enum(*[c.value for c in Construct]), "idle_us": NUM, "idle_share": NUM,
                          "by_cause_us": by_key(NUM), "launches": INT, "calls": INT, "host_us": NUM,
                          "names": arr(STR)})),
    "roofline": arr(obj({"name": STR, "flops": NUM, "bytes": NUM, "intensity": NUM, "achieved_tflops": NUM,
                         "achieved_gbps": NUM, "bound": BOUND})),
    "peaks": opt(obj({"name": STR, "source": STR, "bytes_per_s": NUM, "flops_per_s": by_key(NUM)})),
    "lines": {**arr(STR), "minItems": 5, "maxItems": 5},
    # each figure the lines state, with its field's value (issue 33: claims as data, checked)
    "claims": arr(obj({"key": STR, "value": NUM, "said": STR})),
    "next_experiment": obj({"lever": STR, "why": STR, "waste": STR, "kind": STR, "predicted_ratio": opt(NUM),
                            "whatif_lever": opt(STR), "only": opt(STR), "unprofiled_ratio": opt(NUM)},
                           {"own_fix": opt(obj({"kind": STR, "whatif_lever": STR, "predicted_ratio": NUM}))}),
    # 1.1: is the trace whole (issue 24), and the profiler's own cost
    "health": obj({"ok": BOOL, "line": opt(STR),
                   "findings": arr(obj({"problem": STR, "count": INT, "total": INT, "shown": BOOL,
                                        "withholds": arr(STR), "says": STR}))}),
    "profiler": opt(obj({"profiled_us": NUM, "unprofiled_us": NUM, "slowdown": NUM, "host_us": NUM, "ops": INT,
                         "calls": INT, "idle_share": NUM, "unprofiled_idle_share": NUM, "buffer_us": NUM,
                         "source": STR, "launch_bound_only_under_profiler": BOOL, "worth_saying": BOOL})),
    # where in the user's code (a trace with stacks), and the ATen ops of Inductor kernels
    "stacks": obj({"recorded": BOOL, "python_events": INT}),
    "source_lines": opt(obj({"hotspots": by_key(SOURCE_LINES), "kernels": by_key(SOURCE_LINES),
                             "idle": by_key(SOURCE_LINES), "next": opt(SOURCE_LINE)})),
    "fused_kernels": by_key(FUSED_KERNEL),
})

# `report DIR`: one row per rank (a report of its own, less its schema_version) and the straggler
RANKS = obj({
    "schema_version": VERSION,
    "ranks": arr({"allOf": [obj({"rank": opt(INT), "rank_from": STR, "file": STR,
                                 "collectives": obj({"calls": INT, "total_us": NUM, "steps_from": STR,
                                                     "kernels": arr(STR), "per_step_us": arr(NUM)})}),
                            {**REPORT, "required": [k for k in REPORT["required"] if k != "schema_version"]}]}),
    "straggler": opt(obj({"rank": INT, "basis": STR, "step_us": opt(NUM), "per_rank": arr(obj({"rank": opt(INT)}))})),
    "straggler_reason": opt(STR),
    "lines": arr(STR), "caveats": arr(STR), "errors": by_key(STR),   # file -> its one-line error
})

# --- diff ------------------------------------------------------------------------------------------

SIDE = obj({"trace": STR, "name": STR, "device_name": opt(STR), "steps": INT, "span_us": NUM, "kernel_busy_us": NUM,
            "copy_us": NUM, "idle_us": NUM, "idle_share": NUM, "idle_by_cause_us": PER_CAUSE_US,
            "idle_dominant": opt(CAUSE), "kernels": INT, "launch_calls": INT, "graph_launches": INT,
            "span_per_launch_us": opt(NUM), "bytes": opt(NUM), "bytes_source": opt(STR), "roofline_bytes": NUM,
            "charged_bytes": NUM, "byte_coverage": NUM, "flops": NUM, "achieved_gbps": opt(NUM), "regime": REGIME,
            "regime_detail": REGIME_DETAIL, "top_ops": arr(HOTSPOT), "uncosted_why_us": by_key(NUM),
            "caveats": arr(STR)})

DIFF = obj({
    "schema_version": VERSION,
    "before": SIDE, "after": SIDE,
    "speedup": opt(NUM), "time_saved_us": NUM, "busy_change_us": NUM, "idle_change_us": PER_CAUSE_US,
    "launch_ratio": opt(NUM), "byte_ratio": opt(NUM), "flop_ratio": opt(NUM), "kernel_ratio": opt(NUM),
    "per_step": BOOL, "steps": obj({"before": INT, "after": INT}),
    "top_ops_change": arr(obj({"name": STR, "before_us": opt(NUM), "after_us": opt(NUM)})),
    "prediction": opt(obj({"lever": STR, "predicted_ratio": NUM, "measured_ratio": NUM, "before_ns": INT,
                           "predicted_ns": INT, "after_ns": INT})),
    "explained_by": STR, "caveats": arr(STR), "lines": arr(STR),
})

# --- whatif ----------------------------------------------------------------------------------------

WHATIF = obj({
    "schema_version": VERSION,
    "baseline_us": NUM,
    "unprofiled_us": opt(NUM),     # 1.1
    "levers": arr(obj({"lever": STR, "predicted_us": NUM, "predicted_ratio": NUM, "saving_us": NUM,
                       "unprofiled_ratio": opt(NUM), "assumptions": STR})),
})

SCHEMAS = {"report": {"anyOf": [REPORT, RANKS]}, "diff": DIFF, "whatif": WHATIF}
TITLES = {"report": "tracetriage report --json (one trace, or a directory of ranks)", "diff": "tracetriage diff --json",
          "whatif": "tracetriage whatif --json"}


def schema(kind: str) -> dict:
    """The JSON Schema of `tracetriage KIND --json` (KIND: report, diff, whatif)."""
    return {"$schema": DIALECT, "$id": f"urn:tracetriage:{kind}:{SCHEMA_VERSION}", "title": TITLES[kind],
            "description": f"schema_version {SCHEMA_VERSION}: every key listed is required; more keys may appear.",
            **SCHEMAS[kind]}
