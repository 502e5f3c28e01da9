"""The README's table of real-library fixes: `python -m tools.realworld_table [FOLDER]`.

For every scenario in FOLDER/measured.json (default traces/realworld) and every lever measured on it: the
what-if prediction from the "before" trace alone and the measured after/before ratio, profiled (the traced span)
and unprofiled (wall time; the prediction: the lever's fix replayed without the profiler's per-event cost,
tracetriage.analyzers.whatif.unprofiled), measured as median [p10–p90], and the report's Next on the "before" trace, ticked
when it is the lever that measured best. One markdown row per (lever, workload), sorted by lever then workload.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.whatif.predict import predict

DEFAULT = Path(__file__).resolve().parents[1] / "traces" / "realworld"


def _spread(r: dict) -> str:
    return f"{r['median']:.2f} [{r['p10']:.2f}–{r['p90']:.2f}]"


def rows(folder: Path = DEFAULT) -> list[str]:
    scenarios = json.loads((folder / "measured.json").read_text())["scenarios"]
    out = []
    for kind, sc in scenarios.items():
        before = folder / f"{kind}--before.json.gz"
        whatif = predict(load(before), unprofiled=True)
        chosen = analyze_file(before).next_experiment.lever
        next_lever = chosen.lever if chosen else None
        measured_best = min(sc["ratio"], key=lambda lv: sc["ratio"][lv]["median"])
        for lever, ratio in sc["ratio"].items():
            tick = " ✓" if next_lever == measured_best else ""
            p = whatif.lever(lever)
            out.append((lever, kind, f"| `{lever}` | {kind} | {p.predicted_ratio:.2f} | {_spread(ratio)} | "
                                     f"{p.unprofiled_ratio:.2f} | {_spread(sc['wall_ratio'][lever])} | "
                                     f"`{next_lever}`{tick} |"))
    return [row for _, _, row in sorted(out)]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    print("\n".join(rows(Path(args[0]) if args else DEFAULT)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
