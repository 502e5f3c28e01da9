"""Each knob's prediction from its before trace beside the ratio measured on the GPU (traces/fixes/knobs and
traces/fixes/knobs3 on an H200, traces/fixes/loader, knobs4 and knobs5 on an H100: each capture's device named in its
CAPTURED.md section), with the dev/test half of each pair (the first byte of sha256 of the before trace's name: even
is dev).
A knob a trace cannot price (cudnn_benchmark) predicts 1.00 by design: its rows say "unpriced" where the
measurement moved, not MISS.

    python -m tools.knob_check [--half dev|test] [--folder traces/fixes/knobs3]
    python -m tools.knob_check --truth /work/fresh9/traces/fresh9     # a blind set's folder, its traces not committed

`--truth FOLDER` reads a folder of blind before/after pairs (`<name>-before.json.gz` beside a truth.json whose
`workloads` give each pair's measured `speedup` and `speedup_profiled`, as the fresh sets write them) and prints, per
pair, the lever the report's Next names on the before trace, its predicted ratio (traced and without the profiler),
and the ratio measured (1 / speedup). Nothing of the folder is copied into the repository.
"""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import LEVERS

KNOBS = Path(__file__).resolve().parent.parent / "traces" / "fixes" / "knobs"
KNOBS3 = KNOBS.parent / "knobs3"
LOADER = KNOBS.parent / "loader"
KNOBS4 = KNOBS.parent / "knobs4"
KNOBS5 = KNOBS.parent / "knobs5"
FOLDERS = (KNOBS, KNOBS3, LOADER, KNOBS4, KNOBS5)
WIDEN = 0.05


def half(name: str) -> str:
    return "dev" if hashlib.sha256(name.encode()).digest()[0] % 2 == 0 else "test"


def rows(folder: Path = KNOBS, only: str | None = None):
    """Each pair's prediction and measurement; `only` a half: the other half's traces are not even replayed."""
    measured = json.loads((folder / "measured.json").read_text())["scenarios"]
    for kind, sc in measured.items():
        before = f"{kind}--before.json.gz"
        if only and half(before) != only:
            continue
        w = whatif.predict(load(folder / before))
        for lever, r in sc["ratio"].items():
            pred = w.lever(lever).predicted_ratio
            ok = r["p10"] - WIDEN <= pred <= r["p90"] + WIDEN
            knob = LEVERS[lever].knob
            yield dict(kind=kind, lever=lever, half=half(before), predicted=pred, median=r["median"], p10=r["p10"],
                       p90=r["p90"], wall=sc["wall_ratio"][lever]["median"], ok=ok,
                       priced=knob is None or knob.priced)


def truth_rows(folder: Path):
    """Each blind pair's Next lever and prediction beside its measured ratio (the module docstring's --truth)."""
    from tracetriage.analyzers.triage.report import analyze_file

    for w in json.loads((folder / "truth.json").read_text())["workloads"]:
        before = folder / f"{w['name']}-before.json.gz"
        if not before.exists() or not w.get("speedup"):
            continue
        nx = analyze_file(before).next_experiment
        lv = nx.lever
        yield dict(kind=w["name"], next=lv.lever if lv is not None else nx.kind.value,
                   predicted=lv.predicted_ratio if lv is not None else None,
                   unprofiled=lv.unprofiled_ratio if lv is not None else None,
                   measured=1 / w["speedup"], profiled=1 / w["speedup_profiled"] if w.get("speedup_profiled") else None)


def _ratio(x: float | None) -> str:
    return "  -  " if x is None else f"{x:.3f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--half", choices=("dev", "test"))
    ap.add_argument("--folder", type=Path, action="append", help="a folder of pairs with its measured.json "
                    "(default: traces/fixes/knobs, knobs3, loader, knobs4 and knobs5)")
    ap.add_argument("--truth", type=Path, help="a folder of blind pairs with a truth.json (its traces stay there)")
    args = ap.parse_args(argv)
    if args.truth is not None:
        for r in truth_rows(args.truth):
            print(f"{r['kind']:40s} Next {r['next']:20s} predicted {_ratio(r['predicted'])} unprofiled "
                  f"{_ratio(r['unprofiled'])}  measured {r['measured']:.3f} (profiled {_ratio(r['profiled'])})")
        return 0
    for r in (r for folder in (args.folder or FOLDERS) if (folder / "measured.json").exists()
              for r in rows(folder, args.half)):
        print(f"{r['half']:4s} {r['kind']:26s} {r['lever']:18s} predicted {r['predicted']:.3f}  measured "
              f"{r['median']:.3f} [{r['p10']:.3f}-{r['p90']:.3f}] unprofiled {r['wall']:.3f}  "
              f"{'ok' if r['ok'] else 'MISS' if r['priced'] else 'unpriced'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
