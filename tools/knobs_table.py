"""docs/knobs.md from the catalogue (tracetriage.analyzers.whatif.levers.catalogue), the registry's specs and the
captures that measured each lever on the H200 (and the loader pairs on an H100).

    python -m tools.knobs_table > docs/knobs.md
"""
from __future__ import annotations

import json
from pathlib import Path

from tracetriage.analyzers.whatif.levers import LEVERS
from tracetriage.analyzers.whatif.levers.catalogue import CATALOGUE

ROOT = Path(__file__).resolve().parent.parent
FIXES = ROOT / "traces" / "fixes"
MEASURED = [FIXES / "knobs", FIXES / "knobs3", FIXES / "loader", FIXES / "knobs4", ROOT / "traces" / "realworld", FIXES]

HEAD = """# The knobs: every one of PyTorch's tuning guides, and what the trace can say of it

One row per knob of the Performance Tuning Guide, the torch.compile troubleshooting and performance pages,
the CUDA semantics page and the DataLoader docs (and, last, faster paths PyTorch ships for what users write
by hand). **Lever** is the what-if lever that recognises the knob in a trace and predicts its saving
(`tracetriage whatif TRACE --lever NAME`); **recognised by** is what in the trace shows it applies;
**predicted by** is the lever's model; **verified on** lists the before/after pairs captured on an H200
(traces/fixes/knobs and knobs3, traces/realworld, traces/fixes) or an H100 (traces/fixes/loader, knobs4): 5 profiled
and 5 unprofiled runs each; tests check each
prediction lands in the measured spread ±0.05; an unpriced knob's, that it predicts no saving). A row without a
lever says why a trace cannot show or price it.
**try applies it by** is how `tracetriage try SCRIPT` turns the knob in a child process without editing your code
(docs/try.md); "—": it needs an edit.

The one-line knobs (a lever with a `knob`) are ranked first in the report's Next when the trace shows they
apply and they predict at least 3% of the span; a bigger change that would save more follows as "then".
Device-aware: TF32 and bf16 only on devices whose tensor cores run them (Ampere and later, MI200/MI300), fp8
only on Hopper, Ada and MI300; each prediction uses the peak of the precision the knob switches to (measured
ceilings beside the trace first, else the datasheet;
sdpa's the datasheet's: the share its fused kernels reach was measured against it).

This file is written by `python -m tools.knobs_table > docs/knobs.md` from
`analyzers/whatif/levers/catalogue.py`; a test checks they agree.

| guide | knob | the change | lever | recognised by | predicted by | verified on | try applies it by |
| --- | --- | --- | --- | --- | --- | --- | --- |
"""


def _captures() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for folder in MEASURED:
        m = folder / "measured.json"
        if not m.exists():
            continue
        for kind, sc in json.loads(m.read_text())["scenarios"].items():
            for lever in sc["ratio"]:
                out.setdefault(lever, []).append(f"{folder.name}/{kind}")
    return out


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def _outside(e) -> str:
    o = e.outside
    if o is None:
        return "—"
    marks = [m for m, on in (("changes numerics", o.numerics), ("GPU only", o.gpu_only)) if on]
    return f"`{o.key}`: {o.how}" + (f" ({', '.join(marks)})" if marks else "")


def table() -> str:
    caps = _captures()
    rows = []
    for e in CATALOGUE:
        spec = LEVERS.get(e.lever) if e.lever else None
        knob = spec.knob if spec is not None else None
        seen = e.seen or (knob.evidence if knob else "")
        if spec is not None and not seen:
            seen = f"what {spec.words} acts on (docs/whatif.md)"
        model = knob.model if knob else (f"the {e.lever} replay (docs/whatif.md)" if spec else "—")
        verified = ", ".join(caps.get(e.lever, [])) if spec else ""
        lever = f"`{e.lever}`" if spec else "—"
        if not spec:
            model = "— " + e.unseen if e.unseen else "—"
        rows.append("| " + " | ".join(_cell(x) for x in (e.guide, e.knob, f"`{e.change}`", lever, seen or "—",
                                                          model, verified or "—", _outside(e))) + " |")
    return HEAD + "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(table(), end="")
