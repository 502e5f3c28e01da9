"""Corpus runner: the report on every trace of a folder of other people's traces, as one table.

    python -m analyzers.tools.corpus /work/corpus/set                    # a text table
    python -m analyzers.tools.corpus /work/corpus/set --markdown         # the README's table
    python -m analyzers.tools.corpus /work/corpus/set --json out.json    # every row, machine-readable

Each trace is reported by `tracetriage report --json` in a fresh process with an empty
cache (the time column is a cold report, import included, as a new user would see it).
The readings file (analyzers/tools/corpus_readings.toml) holds what a person read on
each timeline: where the trace comes from, what the timeline shows, and the verdict it
should get (dominant idle cause and regime). The table says whether the report agrees
and, where it does not, why. The traces themselves are never committed: they belong to
other projects; the readings name their source repository and path.

The report is read only through its JSON contract (docs/json.md, `report --json`); nothing
here re-derives a number the analyzers compute.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

READINGS = Path(__file__).with_name("corpus_readings.toml")
_TRACE_SUFFIXES = (".json", ".json.gz")


@dataclass
class Row:
    file: str
    source: str
    device: str
    torch: str            # from the trace's metadata when it records one, else how it was dated
    events: int
    seconds: float        # a cold `report --json`, fresh process
    dominant: str
    regime: str
    idle_share: float | None
    expected_dominant: str
    expected_regime: str
    matches: str          # "yes" / "no" / "?" (no reading yet)
    why_not: str
    error: str = ""


def _header_facts(path: Path) -> dict:
    """The torch version and capture date a trace records in its top-level metadata.

    Kineto writes these keys before or after traceEvents; reading the first and last
    64 KB finds them without decoding the whole file again.
    """
    import gzip

    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as f:
        head = f.read(65536)
        tail = b""
        while chunk := f.read(1 << 20):
            tail = (tail + chunk)[-65536:]
    text = (head + tail).decode("utf-8", "replace")
    facts = {}
    m = re.search(r'"(?:torch_version|pytorch_version|pytorch version|torch version)"\s*:\s*"([^"]+)"', text, re.I)
    if m:
        facts["torch"] = m.group(1)
    m = re.search(r'"baseTimeNanoseconds"\s*:\s*(\d+)', text)
    if m:
        facts["date"] = datetime.fromtimestamp(int(m.group(1)) / 1e9, timezone.utc).strftime("%Y-%m")
    return facts


def _report(path: Path, cache_dir: str) -> tuple[dict | None, float, str]:
    env = dict(os.environ, TRACETRIAGE_CACHE_DIR=cache_dir)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "tracetriage", "report", "--json", "--quiet", str(path)],
                       capture_output=True, text=True, env=env, timeout=600)
    seconds = time.perf_counter() - t0
    if p.returncode != 0:
        return None, seconds, (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
    return json.loads(p.stdout), seconds, ""


def load_readings(path: Path = READINGS) -> dict[str, dict]:
    with open(path, "rb") as f:
        data = tomllib.load(f)
    return {t["file"]: t for t in data.get("trace", [])}


NEGLIGIBLE_IDLE = 0.05   # under this idle share no dominant cause is judged ("negligible" in the readings)


def _verdict_matches(got_dom: str, got_regime: str, idle_share: float | None, reading: dict) -> tuple[str, str]:
    exp_dom, exp_reg = reading.get("expected_dominant", ""), reading.get("expected_regime", "")
    if not exp_dom and not exp_reg:
        return "?", ""
    misses = []
    if exp_dom == "negligible":
        if idle_share is not None and idle_share >= NEGLIGIBLE_IDLE:
            misses.append(f"idle {100 * idle_share:.0f}% ({got_dom}), read negligible")
    elif exp_dom and got_dom not in exp_dom.split("|"):
        misses.append(f"dominant {got_dom}, read {exp_dom}")
    if exp_reg and got_regime not in exp_reg.split("|"):
        misses.append(f"regime {got_regime}, read {exp_reg}")
    if not misses:
        return "yes", ""
    return "no", "; ".join(misses) + (f" ({reading['why_not']})" if reading.get("why_not") else "")


def run(directory: Path, readings: dict[str, dict]) -> list[Row]:
    files = sorted(p for p in directory.iterdir() if p.name.endswith(_TRACE_SUFFIXES))
    rows = []
    for path in files:
        reading = readings.get(path.name, {})
        with tempfile.TemporaryDirectory(prefix="tracetriage-corpus-") as cache:
            out, seconds, err = _report(path, cache)
        facts = _header_facts(path)
        torch = facts.get("torch") or reading.get("torch") or (f"n/r ({facts['date']})" if "date" in facts else "n/r")
        if out is None:
            rows.append(Row(path.name, reading.get("source", ""), reading.get("device", ""), torch, 0, seconds,
                            "error", "error", None, reading.get("expected_dominant", ""),
                            reading.get("expected_regime", ""), "no", err, err))
            continue
        dom = out["idle"]["dominant"] or "none"
        regime = out["regime"] or "none"
        ok, why = _verdict_matches(dom, regime, out.get("idle_share"), reading)
        rows.append(Row(path.name, reading.get("source", ""), out["trace"]["device_name"] or reading.get("device") or ("no GPU" if out["regime"] is None else "unnamed"), torch,
                        int(out["trace"]["events"]), seconds, dom, regime, out.get("idle_share"),
                        reading.get("expected_dominant", ""), reading.get("expected_regime", ""), ok, why))
    return rows


def markdown(rows: list[Row]) -> str:
    lines = ["| trace (source) | device | torch | events | time | dominant idle | regime | matches reading? |",
             "|---|---|---|---:|---:|---|---|---|"]
    for r in rows:
        verdict = r.matches if r.matches != "no" else f"no: {r.why_not}"
        lines.append(f"| {r.file} ({r.source}) | {r.device} | {r.torch} | {r.events:,} | {r.seconds:.1f} s | "
                     f"{r.dominant} | {r.regime} | {verdict} |")
    agree = sum(r.matches == "yes" for r in rows)
    lines.append(f"\n{agree} of {len(rows)} verdicts match the reading.")
    return "\n".join(lines)


def text_table(rows: list[Row]) -> str:
    out = [f"{'trace':44} {'device':26} {'events':>8} {'time':>6} {'dominant':16} {'regime':9} match"]
    for r in rows:
        out.append(f"{r.file[:44]:44} {r.device[:26]:26} {r.events:8d} {r.seconds:5.1f}s {r.dominant[:16]:16} "
                   f"{r.regime:9} {r.matches}{': ' + r.why_not if r.why_not else ''}")
    agree = sum(r.matches == "yes" for r in rows)
    out.append(f"{agree} of {len(rows)} verdicts match the reading")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("directory", type=Path)
    ap.add_argument("--readings", type=Path, default=READINGS)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", type=Path, help="also write every row to this file")
    a = ap.parse_args(argv)
    if not a.directory.is_dir():
        print(f"error: {a.directory} is not a directory", file=sys.stderr)
        return 2
    rows = run(a.directory, load_readings(a.readings))
    print(markdown(rows) if a.markdown else text_table(rows))
    if a.json:
        a.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
