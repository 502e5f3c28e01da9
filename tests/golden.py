"""Golden files: the exact text and `--json` output of `report` and `diff` on the sample library.

    python tests/golden.py          # rewrite tests/golden/ from the current build (then read the diff)

A change of wording or verdict shows up as a diff of these files, and is deliberate.
tests/test_golden.py compares the current output with them.
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"

DIFF_PAIRS = [
    ("chain-eager-large", "chain-triton-large"),
    ("chain-eager-large", "chain-compile-large"),
    ("chain-eager-small", "chain-triton-small"),
    ("gpt-eager", "gpt-compile"),
    ("gpt-compile", "gpt-graphs"),
    ("smell-sync-item", "control-sync-light"),
    ("smell-launch-tiny-ops", "smell-host-python"),
]


def sample_traces() -> list[str]:
    names = sorted(p.name[:-len(".json.gz")] for p in (ROOT / "traces").glob("*.json.gz"))
    return names + ["ddp", "ddp-skewed"]   # the rank directories: `report DIR`


def cases() -> list[tuple[str, list[str]]]:
    """(golden file name, CLI argv), paths relative to the repo root as a user would type them."""
    out = []
    for name in sample_traces():
        path = f"traces/{name}" + ("" if (ROOT / "traces" / name).is_dir() else ".json.gz")
        out.append((f"report/{name}.txt", ["report", "--quiet", path]))
        out.append((f"report/{name}.json", ["report", "--quiet", "--json", path]))
    for before, after in DIFF_PAIRS:
        args = [f"traces/{before}.json.gz", f"traces/{after}.json.gz"]
        out.append((f"diff/{before}--{after}.txt", ["diff", *args]))
        out.append((f"diff/{before}--{after}.json", ["diff", "--json", *args]))
    return out


def run_cli(argv: list[str]) -> str:
    """The CLI's stdout, run in-process from the repo root."""
    from tracetriage.cli import main

    buf = io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(buf):
            code = main(argv)
    finally:
        os.chdir(cwd)
    if code != 0:
        raise RuntimeError(f"tracetriage {' '.join(argv)} exited {code}")
    return buf.getvalue()


def main() -> int:
    sys.path.insert(0, str(ROOT))
    # every trace decoded by this build: an entry in ~/.cache/tracetriage (keyed by the file's content, written
    # by whichever build read it first) would hide a change to loading from the files
    os.environ.setdefault("TRACETRIAGE_NO_CACHE", "1")
    for rel, argv in cases():
        path = GOLDEN / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(run_cli(argv), encoding="utf-8")
    print(f"wrote {len(cases())} golden files under {GOLDEN.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
