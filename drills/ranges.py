"""A sample trace as a drill shows it: without the capture's file name, and (a drill that does not ask about
ranges) with the capture's own range names made neutral.

    rename_ranges("traces/smell-host-python.json.gz", "shown/M02.04-b.json.gz")
        # 'host_phase' -> 'range_1', 'gpu_phase' -> 'range_2'; torch's own ranges kept
    unnamed("traces/generate/generate-llama-b1-eager.json.gz", "shown/M00.04-d.json.gz")
        # the same events; no `traceName` ("/tmp/.../generate-llama-b1-eager.json" says eager, batch 1)

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


# The trace's own metadata that names the capture's file (torch.profiler writes the path it exported to); the
# analyzers read none of it.
NAMING_KEYS = ("traceName",)


def _read(src: Path) -> dict:
    raw = src.read_bytes()
    doc = msgspec.json.decode(gzip.decompress(raw) if src.name.endswith(".gz") else raw)
    for k in NAMING_KEYS:
        doc.pop(k, None)
    return doc


def _write(doc: dict, dst: Path, gz: bool) -> Path:
    """`gz`: as the source was (the caller may write to a temporary name that ends in neither)."""
    out = msgspec.json.encode(doc)
    dst.write_bytes(gzip.compress(out, compresslevel=1) if gz else out)
    return dst


def unnamed(src: str | Path, dst: str | Path) -> Path:
    """The trace without the metadata that names the capture's file."""
    return _write(_read(Path(src)), Path(dst), Path(src).name.endswith(".gz"))


def rename_ranges(src: str | Path, dst: str | Path) -> Path:
    src, dst = Path(src), Path(dst)
    doc = _read(src)
    names: dict[str, str] = {}
    for e in doc.get("traceEvents", []):
        if str(e.get("cat", "")).lower() in RANGE_CATEGORIES:
            name = str(e.get("name", ""))
            if name and not TORCHS_OWN.match(name):
                e["name"] = names.setdefault(name, f"range_{len(names) + 1}")
    return _write(doc, dst, src.name.endswith(".gz"))
