"""Check the unprofiled predictions against the fixes measured both ways on the H200.

    python -m tools.profiler_cost [--markdown] [DIR ...]     (default: traces/realworld traces/fixes)
    python -m tools.profiler_cost --truth DIR [DIR ...]       (captures with a truth.json: fresh7, fresh8)

Each DIR holds `measured.json` (per workload and variant: the profiled spans and the unprofiled wall times
of 5 runs, with the after/before ratios of each) and the trace of each variant (the run with the median
span). For every variant: the profiler's overhead, predicted (tracetriage.analyzers.whatif.unprofiled: the trace's
replay without the profiler's per-event cost, over the traced span) against measured (the median wall
time over the median span); for every fix: the lever's predicted ratio under the profiler against the
profiled ratio measured, and its predicted ratio without the profiler against the unprofiled one. The
per-event constants in tracetriage.analyzers.whatif.unprofiled were fitted on these pairs; this prints how well.
With --truth, each DIR holds a capture harness's truth.json (per workload, before and after: the profiled ms per
step and the unprofiled median, their ratio `profiler_slowdown`) and the traces it names: the overhead only.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.whatif.predict import predict

DIRS = (Path("traces/realworld"), Path("traces/fixes"))
# a cold process (its first step loads every kernel) and a recompiling loop: their profiled time is set-up and
# compilation the profiler barely touches, and their unprofiled runs were timed warm: not a profiler pair
NOT_PAIRS = ("warm_up_cold", "recompile")      # (name prefixes: warm_up_cold_gpt2, recompile_batch ...)
LEVER_OF_VARIANT = {"static_cache": None}      # a variant no lever stands for


def rows(dirs=DIRS) -> tuple[list[dict], list[dict]]:
    """(per variant: the overhead predicted and measured; per fix: both ratios predicted and measured)."""
    over, fixes = [], []
    for d in dirs:
        scenarios = json.loads((d / "measured.json").read_text())["scenarios"]
        for kind, sc in scenarios.items():
            for var, span in sc["span_us"].items():
                path = d / f"{kind}--{var}.json.gz"
                wall = sc.get("wall_ms", {}).get(var)
                if kind.startswith(NOT_PAIRS) or not path.exists() or wall is None:
                    continue
                w = predict(load(path), unprofiled=True)
                over.append({"workload": kind, "variant": var, "predicted": w.unprofiled_ns / w.baseline_ns,
                             "measured": wall["median"] * 1e3 / span["median"]})
                if var != "before":
                    continue
                for lever, r in sc.get("ratio", {}).items():
                    name = LEVER_OF_VARIANT.get(lever, lever)
                    p = next((x for x in w.levers if x.lever == name), None)
                    wr = _wall_ratio(sc, lever)
                    if p is None or wr is None:
                        continue
                    fixes.append({"workload": kind, "lever": lever, "predicted": p.predicted_ratio,
                                  "measured": r["median"], "measured_p10": r["p10"], "measured_p90": r["p90"],
                                  "unprofiled_predicted": p.unprofiled_ratio, "unprofiled_measured": wr["median"],
                                  "unprofiled_p10": wr["p10"], "unprofiled_p90": wr["p90"]})
    return over, fixes


def truth_rows(dirs) -> list[dict]:
    """Per traced variant of a truth.json: the profiler's slowdown predicted (replay over unprofiled replay) and
    measured (profiled ms per step over the unprofiled median), as `over` rows of rows()."""
    over = []
    for d in dirs:
        for w in json.loads((d / "truth.json").read_text())["workloads"]:
            for var in ("before", "after"):
                v = w.get(var) or {}
                if "trace" not in v or not (d / v["trace"]).exists():
                    continue
                run = predict(load(d / v["trace"]), levers=["kernels_2x"], unprofiled=True).unprofiled_run
                over.append({"workload": w["name"], "variant": var, "predicted": run.unprofiled_ns / run.replay_ns,
                             "measured": 1 / v["profiler_slowdown"]})
    return over


def _wall_ratio(sc: dict, lever: str) -> dict | None:
    """The unprofiled ratio's median, p10 and p90: as measured.json gives them, or (where it gives the median
    only) from every pair of the after and before wall times."""
    wr = sc.get("wall_ratio", {}).get(lever)
    if isinstance(wr, dict) or wr is None:
        return wr
    walls = sc.get("wall_ms", {})
    if lever not in walls or "before" not in walls:
        return {"median": wr, "p10": wr, "p90": wr}
    pairs = np.divide.outer(np.array(walls[lever]["runs"]), np.array(walls["before"]["runs"])).ravel()
    return {"median": wr, "p10": float(np.percentile(pairs, 10)), "p90": float(np.percentile(pairs, 90))}


def _within(pred: float, lo: float, hi: float, slack: float = 0.05) -> bool:
    return lo - slack <= pred <= hi + slack


def markdown(over: list[dict], fixes: list[dict]) -> str:
    out = ["| workload | fix | profiled: predicted | measured (p10–p90) | unprofiled: predicted | measured (p10–p90) |",
           "|---|---|---:|---:|---:|---:|"]
    for f in fixes:
        out.append(f"| {f['workload']} | {f['lever']} | {f['predicted']:.2f} | {f['measured']:.2f} "
                   f"({f['measured_p10']:.2f}–{f['measured_p90']:.2f}) | {f['unprofiled_predicted']:.2f} | "
                   f"{f['unprofiled_measured']:.2f} ({f['unprofiled_p10']:.2f}–{f['unprofiled_p90']:.2f}) |")
    return "\n".join(out) + "\n\n" + summary(over, fixes) + "\n"


def summary(over: list[dict], fixes: list[dict]) -> str:
    err = np.array([np.log(o["predicted"] / o["measured"]) for o in over])
    ok_p = sum(_within(f["predicted"], f["measured_p10"], f["measured_p90"]) for f in fixes)
    ok_u = sum(_within(f["unprofiled_predicted"], f["unprofiled_p10"], f["unprofiled_p90"]) for f in fixes)
    return (f"overhead (unprofiled over profiled), {len(over)} variants: median error {np.median(np.abs(err)):.1%}, "
            f"rms {np.sqrt(np.mean(err ** 2)):.1%}, the slowdown under-stated on {int(np.sum(err > 0))}; "
            f"fixes within their p10-p90 (±0.05): profiled {ok_p}/{len(fixes)}, "
            f"unprofiled {ok_u}/{len(fixes)}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*", type=Path)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--truth", action="store_true", help="DIRs hold a truth.json (the overhead only)")
    args = ap.parse_args(argv)
    over, fixes = (truth_rows(args.dirs), []) if args.truth else rows(tuple(args.dirs) or DIRS)
    if args.markdown:
        sys.stdout.write(markdown(over, fixes))
        return 0
    for o in over:
        print(f"{o['workload']:24s} {o['variant']:16s} unprofiled/profiled predicted {o['predicted']:.2f} "
              f"measured {o['measured']:.2f}")
    for f in fixes:
        print(f"{f['workload']:24s} {f['lever']:16s} profiled {f['predicted']:.2f} vs {f['measured']:.2f}  "
              f"unprofiled {f['unprofiled_predicted']:.2f} vs {f['unprofiled_measured']:.2f}")
    print(summary(over, fixes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
