"""A trace without its named ranges: `python -m tracetriage.analyzers.output.strip_ranges IN OUT`.

Drops the `user_annotation` and `gpu_user_annotation` events (record_function, named_range, and torch's own
`Optimizer.step#...` / `ProfilerStep#N` ranges), keeps every other event as it is. What a trace looks like
when its workload was profiled without ranges: the drills of "Prefill or decode: the incident" (M00.04) show
the bundled prefill+decode traces so, and the tests check that steps and phases found without ranges match
what the ranges say.
"""
from __future__ import annotations

import gzip
import sys
from pathlib import Path

import msgspec

RANGE_CATEGORIES = frozenset({"user_annotation", "gpu_user_annotation"})


def strip(src: str | Path, dst: str | Path) -> Path:
    src, dst = Path(src), Path(dst)
    raw = src.read_bytes()
    doc = msgspec.json.decode(gzip.decompress(raw) if src.name.endswith(".gz") else raw)
    doc["traceEvents"] = [e for e in doc.get("traceEvents", [])
                          if str(e.get("cat", "")).lower() not in RANGE_CATEGORIES]
    out = msgspec.json.encode(doc)
    from tracetriage.analyzers.loading.atomic import write_bytes_atomic

    write_bytes_atomic(dst, gzip.compress(out, compresslevel=1) if dst.name.endswith(".gz") else out)
    return dst


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m tracetriage.analyzers.output.strip_ranges IN OUT", file=sys.stderr)
        return 2
    strip(*args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
