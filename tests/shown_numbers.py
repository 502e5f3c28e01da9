"""Which numbers a drill's `drill show` text prints that are its key's answer (issue 34: nothing shown before
grading names the answer). A numeric part's key is given away when show derives it: a line with a statistic of
samples, a per-unit figure or a ratio, holding a number in the part's unit within the grader's tolerance of the key.
Left alone: positions on the timeline ("at 2.30 ms", "from 9.52 ms", an axis' ends), bare samples (a list of
repeats' or passes' walls, whose median the student computes) and the evidence that coincides with a key (a
prompt's pass wall near its TTFT, a peak near a rate at the roof)."""
from __future__ import annotations

import re

from tracetriage.drills.amounts import amounts, in_unit

CLOSE = 0.15   # the grader's tolerance for a right number (grader.CLOSE)

# (kind, numeric part) -> (the key's field, its unit; a field name for the unit where the key says it)
NUMERIC_KEYS = {
    ("ranges", "ttft_ms"): ("ttft_ms", "ms"),
    ("incident", "ttft_ms"): ("ttft_ms", "ms"), ("incident", "per_token_ms"): ("per_token_ms", "ms"),
    ("roofline", "achieved"): ("achieved", "@achieved_unit"),
    ("ledger", "eager_bytes"): ("eager_gb", "GB"), ("ledger", "fused_bytes"): ("fused_gb", "GB"),
    ("ledger", "speedup"): ("speedup", "×"),
    ("shapes", "tflops_small"): ("tflops_small", "TFLOP/s"), ("shapes", "tflops_large"): ("tflops_large", "TFLOP/s"),
    ("floor", "floor_ms"): ("floor_ms", "ms"), ("floor", "per_token_ms"): ("per_token_ms", "ms"),
    ("timer", "median_ms"): ("median_ms", "ms"), ("timer", "spread_pct"): ("spread_pct", "%"),
    ("collapse", "speedup"): ("speedup", "×"),
    ("ridge", "ridge"): ("ridge", "FLOP/byte"),
    ("bytes_ledger", "new_bytes"): ("new_mb", "MB"), ("view_copy", "copy_bytes"): ("copy_mb", "MB"),
    ("intensity", "intensity"): ("intensity", "FLOP/byte"), ("intensity", "batch_at_ridge"): ("batch_at_ridge", ""),
    ("occupancy", "occupancy_pct"): ("occupancy_pct", "%"), ("occupancy", "achieved"): ("achieved", "@achieved_unit"),
    ("transpose", "sector_bytes"): ("sector_mb", "MB"),
}
# a position on the timeline, not a quantity: "at 2.30 ms", "from 9.52 ms to 19.0 ms", "starts 4.1 ms", an axis
POSITION = re.compile(r"(?:\bat|\bfrom|\bto|\bstarts?|\bends?|\|)\s*$")
# a line that derives a quantity from the samples rather than printing them: a statistic, a per-unit figure, where
# a token reaches the host, a ratio; a number of the key's value on such a line is the answer printed (a sample
# near it, a peak near an achieved rate, an op's rate in a one-op trace are evidence and coincide)
DERIVED = re.compile(r"\bmedian\b|(?<!::)\bmean\b|\baverage\b|over the count|reaches the host|\bat least\b|"
                     r"\boccupancy\b|\bfloor\b|\bspeedup\b|\(\s*[\d.]+\s*×\)", re.I)


def key_values(drill, key: dict) -> list[tuple[str, float, str]]:
    out = []
    for part in drill.parts:
        spec = NUMERIC_KEYS.get((drill.kind, part))
        if spec is None or key.get(spec[0]) is None:
            continue
        field, unit = spec
        unit = key.get(unit[1:], "") if unit.startswith("@") else unit
        out.append((part, float(key[field]), unit))
    return out


def leaks(drill, key: dict, text: str) -> list[tuple[str, float, str]]:
    """(part, key value, the line) for every line of show's text printing the part's answer as a quantity."""
    out = []
    shown = text.split("\nPredict before you look closer")[0]   # the questions and answer help quote no trace numbers
    for part, value, unit in key_values(drill, key):
        if not value:
            continue
        for line in shown.splitlines():
            if line.lstrip().startswith("|") or not DERIVED.search(line):
                continue
            for a in amounts(line):
                if unit and a.dim is None:
                    continue       # a bare sample of a list (the repeats' walls): evidence, not the answer
                v = in_unit(a, unit) if unit else (a.value if a.dim is None else None)
                if v is None or POSITION.search(line[:a.start]):
                    continue
                if abs(v / value - 1) <= CLOSE:
                    out.append((part, value, line))
                    break
    return out
