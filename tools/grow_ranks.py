"""Grow a real 2-rank run into N ranks: copies of its ranks, each with its own distributedInfo.

    python -m tools.grow_ranks /tmp/run128 --ranks 128 --straggler 37 --copies 40

Rank `straggler` is a copy of traces/ddp/rank1.json.gz (the rank that sleeps 3 ms a step on its
host), every other rank a copy of rank0.json.gz (which waits for it inside each all-reduce); each
gets `distributedInfo.rank` = its number and `world_size` = N, so the run reads as one N-rank run
with one straggler. `--copies K` first grows both ranks K times (tools.grow: the events
repeated with shifted times and ids), for ranks of a chosen size. For tests and the rank benchmark.
"""
from __future__ import annotations

import argparse
import gzip
from pathlib import Path

import msgspec

from tools.grow import grow
from tracetriage.analyzers.loading.atomic import write_bytes_atomic
from tracetriage.analyzers.loading.read import read_bytes

ROOT = Path(__file__).resolve().parents[1]   # the repo (this file is tools/grow_ranks.py)
DDP = ROOT / "traces" / "ddp"
_RANK, _WORLD = 987654321, 876543210        # placeholders, replaced in the encoded bytes of each copy


def _template(src: Path, copies: int) -> bytes:
    doc = msgspec.json.decode(read_bytes(src))
    if copies > 1:
        doc = grow(doc, copies)
    doc["distributedInfo"] = {**doc.get("distributedInfo", {}), "rank": _RANK, "world_size": _WORLD}
    return msgspec.json.encode(doc)


def write_ranks(dst: str | Path, ranks: int, *, straggler: int | None = 1, copies: int = 1,
                compress: bool = True) -> list[Path]:
    """rank0..rank{N-1} in `dst` (.json.gz, or .json with compress=False); returns their paths."""
    dst = Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    templates: dict[bool, bytes] = {}   # built only when some rank needs it: growing one costs seconds
    out = []
    for r in range(ranks):
        is_late = r == straggler
        if is_late not in templates:
            templates[is_late] = _template(DDP / ("rank1.json.gz" if is_late else "rank0.json.gz"), copies)
        data = templates[is_late].replace(b"%d" % _RANK, b"%d" % r).replace(b"%d" % _WORLD,
                                                                                               b"%d" % ranks)
        path = dst / f"rank{r}.json{'.gz' if compress else ''}"
        write_bytes_atomic(path, gzip.compress(data, compresslevel=1, mtime=0) if compress else data)
        out.append(path)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dst")
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--straggler", type=int, default=1)
    ap.add_argument("--copies", type=int, default=1, help="grow each rank this many times first")
    a = ap.parse_args(argv)
    paths = write_ranks(a.dst, a.ranks, straggler=a.straggler, copies=a.copies)
    print(f"{len(paths)} ranks in {a.dst}, {sum(p.stat().st_size for p in paths) / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
