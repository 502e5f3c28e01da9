"""A sample trace with the capture's own range names made neutral, for a drill that does not ask about ranges.

    rename_ranges("traces/smell-host-python.json.gz", "shown/M02.04-b.json.gz")
        # 'host_phase' -> 'range_1', 'gpu_phase' -> 'range_2'; torch's own ranges kept

Input: a Kineto trace (.json or .json.gz). Output: the same events, each `user_annotation` and
`gpu_user_annotation` whose name the workload chose renamed `range_N` in order of first appearance (a range and
its GPU projection keep one name); torch's own ranges (`ProfilerStep#N`, `Optimizer.step#...`,
`enumerate(DataLoader)...`, compiled graphs' `## Call CompiledFxGraph ... ##`) are what a user's trace shows
too, and stay.
"""
from __future__ import annotations

import gzip
import re
from pathlib import Path

import msgspec

RANGE_CATEGORIES = frozenset({"user_annotation", "gpu_user_annotation"})
TORCHS_OWN = re.compile(r"^(?:ProfilerStep#|Optimizer\.|enumerate\(DataLoader\)|## |DataLoader|torch/|aten::|"
                        r"autograd::|CompiledFunction|Torch-Compiled Region)")


def rename_ranges(src: str | Path, dst: str | Path) -> Path:
    src, dst = Path(src), Path(dst)
    raw = src.read_bytes()
    doc = msgspec.json.decode(gzip.decompress(raw) if src.name.endswith(".gz") else raw)
    names: dict[str, str] = {}
    for e in doc.get("traceEvents", []):
        if str(e.get("cat", "")).lower() in RANGE_CATEGORIES:
            name = str(e.get("name", ""))
            if name and not TORCHS_OWN.match(name):
                e["name"] = names.setdefault(name, f"range_{len(names) + 1}")
    out = msgspec.json.encode(doc)
    dst.write_bytes(gzip.compress(out, compresslevel=1) if dst.name.endswith(".gz") else out)
    return dst
