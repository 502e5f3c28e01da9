"""Unpack the ladder capture (ladder.tar.gz from capture.py) into traces/ladder/RUNG/, keeping what the drills use.

    python tools/ladder_h200/unpack.py /work/device-out/ladder/ladder.tar.gz [--keep-all]

Per rung: the traces the bank's drills show (drills/bank/*.toml, traces/ladder/...), the rung's measured.json (the
capture's facts the tests hold the analysis to, and the code `drill show` prints), and the capture's
ceilings.json beside them (the roofline reads measured peaks from beside a trace); a variant no drill shows is kept
when under half a megabyte (the occupancy rung's other launch shapes: the tests hold the analysis to their facts).
Prints each trace's size, the
total, and the dev/test half of each (the first byte of sha256 of its file name: even is dev), for
traces/CAPTURED.md. --keep-all keeps every variant's trace (the working tree travels to the GPU machine with a
64 MiB limit: keep only what the drills use unless there is room).
"""
from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEST = ROOT / "traces" / "ladder"
SMALL = 500_000    # a trace this small is kept whether or not a drill shows it: the tests check it against the facts


def used_traces() -> set[str]:
    """Every traces/ladder/... path a bank file names (trace or after)."""
    out = set()
    for f in (ROOT / "drills" / "bank").glob("M*.toml"):
        out |= set(re.findall(r'"(traces/ladder/[^"]+)"', f.read_text()))
    return out


def half(name: str) -> str:
    return "dev" if hashlib.sha256(name.encode()).digest()[0] % 2 == 0 else "test"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tarball", type=Path)
    ap.add_argument("--keep-all", action="store_true")
    args = ap.parse_args(argv)
    used = used_traces()
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(args.tarball) as tar:
            tar.extractall(tmp, filter="data")
        src = Path(tmp) / "ladder"
        if DEST.exists():
            shutil.rmtree(DEST)
        DEST.mkdir(parents=True)
        shutil.copy(src / "capture.log", DEST / "capture.log")
        ceilings = src / "ceilings.json"
        total = 0
        for rung in sorted(p for p in src.iterdir() if p.is_dir()):
            out = DEST / rung.name
            out.mkdir()
            shutil.copy(rung / "measured.json", out / "measured.json")
            if ceilings.exists():
                shutil.copy(ceilings, out / "ceilings.json")
            for t in sorted(rung.glob("*.json.gz")):
                rel = f"traces/ladder/{rung.name}/{t.name}"
                if not args.keep_all and rel not in used and t.stat().st_size > SMALL:
                    continue
                shutil.copy(t, out / t.name)
                size = t.stat().st_size
                total += size
                print(f"{rel:60s} {size / 1e6:6.2f} MB  {half(t.name)}")
    missing = [u for u in used if not (ROOT / u).exists()]
    print(f"total {total / 1e6:.1f} MB of traces in {DEST}")
    if missing:
        print(f"error: the bank names traces the capture lacks: {missing}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
