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

# The document's keys decoded and each value kept as its JSON text (msgspec.Raw, written back verbatim): only the
# keys and the few range events change, so the ~190k events of gpt-eager's 70 MB are never made Python objects
# (decoding them all took ~2 s of the ~3 s a shown copy cost; this ~0.05 s).
_DOCUMENT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_EVENTS = msgspec.json.Decoder(list[msgspec.Raw])


def _read(src: Path) -> dict[str, msgspec.Raw]:
    raw = src.read_bytes()
    doc = _DOCUMENT.decode(gzip.decompress(raw) if src.name.endswith(".gz") else raw)
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


def _may_be_a_range(event: bytes) -> bool:
    """Whether an event's text may hold a range category: its name in any case, or an escape that could spell it."""
    return b"user_annotation" in event.lower() or b"\\u" in event


def rename_ranges(src: str | Path, dst: str | Path) -> Path:
    src, dst = Path(src), Path(dst)
    doc = _read(src)
    names: dict[str, str] = {}
    events = _EVENTS.decode(doc["traceEvents"]) if "traceEvents" in doc else []
    for i, text in enumerate(events):
        if not _may_be_a_range(bytes(text)):
            continue
        e = msgspec.json.decode(text)
        if isinstance(e, dict) and str(e.get("cat", "")).lower() in RANGE_CATEGORIES:
            name = str(e.get("name", ""))
            if name and not TORCHS_OWN.match(name):
                e["name"] = names.setdefault(name, f"range_{len(names) + 1}")
                events[i] = msgspec.Raw(msgspec.json.encode(e))
    if names:
        doc["traceEvents"] = msgspec.Raw(msgspec.json.encode(events))
    return _write(doc, dst, src.name.endswith(".gz"))
