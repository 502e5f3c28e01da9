"""Corpus runner: the report on every trace of a folder of other people's traces, as one table.

    python -m tools.corpus /work/corpus/set                    # a text table
    python -m tools.corpus /work/corpus/set --markdown         # the table in docs/validation.md
    python -m tools.corpus /work/corpus/set --json out.json    # every row, machine-readable
    python -m tools.corpus /work/corpus/set --half dev         # only the dev half (fit rules here)
    python -m tools.corpus /work/corpus/set --half test        # only the test half (report it, never tune on it)

The split: a file is in the dev half iff the first byte of sha256(its base name) is even, so a trace's half
never depends on which other traces are in the folder.

Each trace is reported by `tracetriage report --json` in a fresh process with an empty
cache (the time column is a cold report, import included, as a new user would see it).
The readings file (tools/corpus_readings.toml) holds what a person read on
each timeline: where the trace comes from, what the timeline shows, and the verdict it
should get (dominant idle cause and regime). The table says whether the report agrees
and, where it does not, why. The traces themselves are never committed: they belong to
other projects; the readings name their source repository and path.

The table judges three verdicts against the reading: the dominant idle cause, the regime and the kind of
the Next experiment (`expected_next_kind`), and checks on every report the invariants of
tracetriage.analyzers.output.invariants (time adds up, no roofline point above its peak, Next acts on something the
trace has, every number on its line's baseline). A merged multi-rank file is reported per rank (its JSON
is the ranks report): each rank's verdicts and invariants are judged.

The report is read only through its JSON contract (docs/json.md, `report --json`); nothing
here re-derives a number the analyzers compute.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

import tomllib

from tracetriage.analyzers.output import claims, invariants

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
    next_kind: str = ""           # the Next experiment's kind (next_experiment.kind)
    expected_next_kind: str = ""
    physics: tuple[str, ...] = ()   # the invariants the report breaks (tracetriage.analyzers.output.invariants)
    broken_claims: tuple[str, ...] = ()   # the claims it breaks (tracetriage.analyzers.output.claims)


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


# A reading's Next kind that names a family of the report's kinds (the readings file's header): "communication" is
# the lever of a communication-bound trace, the report's overlap_comm or find_straggler; the readings' vocabulary
# predates two kinds that are members of theirs: profile_replays is the warm-up of a trace that holds a graph capture
# (set-up: profile the steady state), fuse is the fewer-bytes experiment of an eager elementwise chain (each element
# read and written once)
NEXT_FAMILIES = {"communication": ("overlap_comm", "find_straggler"), "warm_up": ("warm_up", "profile_replays"),
                 "fewer_bytes": ("fewer_bytes", "fuse")}


def _next_kinds(expected: str) -> set[str]:
    """The report's Next kinds a reading's expected_next_kind accepts ("a|b", families spelled out)."""
    return {k for e in expected.split("|") if e for k in NEXT_FAMILIES.get(e, (e,))}


NEGLIGIBLE_IDLE = 0.05   # under this idle share no dominant cause is judged ("negligible" in the readings)


def _verdict_matches(got_dom: str, got_regime: str, idle_share: float | None, reading: dict,
                     got_next: str = "") -> tuple[str, str]:
    exp_dom, exp_reg = reading.get("expected_dominant", ""), reading.get("expected_regime", "")
    if not exp_dom and not exp_reg:
        return "?", ""
    misses = []
    exp_next = reading.get("expected_next_kind", "")
    if exp_next and got_next and got_next not in _next_kinds(exp_next):
        misses.append(f"Next {got_next}, read {exp_next}")
    if exp_dom == "negligible":
        if idle_share is not None and idle_share >= NEGLIGIBLE_IDLE:
            misses.append(f"idle {100 * idle_share:.0f}% ({got_dom}), read negligible")
    elif exp_dom and got_dom not in exp_dom.split("|"):
        misses.append(f"dominant {got_dom}, read {exp_dom}")
    if exp_reg and got_regime not in exp_reg.split("|"):
        misses.append(f"regime {got_regime}, read {exp_reg}")
    if not misses:
        return "yes", ""
    misses.sort(key=lambda m: m.startswith("Next"))   # the idle cause and the regime first, as before
    return "no", "; ".join(misses) + (f" ({reading['why_not']})" if reading.get("why_not") else "")


def _verdicts(out: dict) -> tuple[str, str, str, float | None]:
    """(dominant idle cause, regime, Next kind, idle share) of one trace's report."""
    return (out["idle"]["dominant"] or "none", out["regime"] or "none", out["next_experiment"]["kind"],
            out.get("idle_share"))


def _ranks_row(path: Path, reading: dict, out: dict, seconds: float, torch: str) -> Row:
    """A merged multi-rank file: its ranks report; each rank's verdicts are judged, and the split."""
    ranks = out["ranks"]
    verdicts = [_verdicts(r) for r in ranks]
    judged = [_verdict_matches(d, g, i, reading, n) for d, g, n, i in verdicts]
    misses = [f"rank {r['rank']}: {why}" for r, (ok, why) in zip(ranks, judged) if ok == "no"]
    want = reading.get("expected_ranks")
    if want is not None and len(ranks) != want:
        misses.insert(0, f"{len(ranks)} ranks, read {want}")
    ok = "?" if all(j[0] == "?" for j in judged) and want is None else ("no" if misses else "yes")
    physics = tuple(f"rank {r['rank']}: {p}" for r in ranks for p in invariants.check(r))
    device = next((r["trace"]["device_name"] for r in ranks if r["trace"]["device_name"]), None)
    return Row(path.name, reading.get("source", ""), device or reading.get("device") or "unnamed", torch,
               sum(int(r["trace"]["events"]) for r in ranks), seconds, f"{len(ranks)} ranks: " +
               "/".join(v[0] for v in verdicts), "/".join(v[1] for v in verdicts), None,
               reading.get("expected_dominant", ""), reading.get("expected_regime", ""), ok, "; ".join(misses),
               next_kind="/".join(v[2] for v in verdicts), expected_next_kind=reading.get("expected_next_kind", ""),
               physics=physics, broken_claims=tuple(claims.check(out)))


def half_of(name: str) -> str:
    """'dev' iff the first byte of sha256(the file's base name) is even, else 'test'."""
    return "dev" if hashlib.sha256(name.encode()).digest()[0] % 2 == 0 else "test"


def run(directory: Path, readings: dict[str, dict], half: str | None = None) -> list[Row]:
    files = sorted(p for p in directory.iterdir() if p.name.endswith(_TRACE_SUFFIXES)
                   and (half is None or half_of(p.name) == half))
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
        if "ranks" in out:   # a merged multi-rank file: reported like a directory of ranks
            rows.append(_ranks_row(path, reading, out, seconds, torch))
            continue
        dom, regime, nxt, idle_share = _verdicts(out)
        ok, why = _verdict_matches(dom, regime, idle_share, reading, nxt)
        device = (out["trace"]["device_name"] or reading.get("device")
                  or ("no GPU" if out["regime"] is None else "unnamed"))
        rows.append(Row(path.name, reading.get("source", ""), device, torch,
                        int(out["trace"]["events"]), seconds, dom, regime, idle_share,
                        reading.get("expected_dominant", ""), reading.get("expected_regime", ""), ok, why,
                        next_kind=nxt, expected_next_kind=reading.get("expected_next_kind", ""),
                        physics=tuple(invariants.check(out)), broken_claims=tuple(claims.check(out))))
    return rows


def _next_right(r: Row) -> bool:
    """The Next's kind is one the reading asks for (every rank's, for a ranks row)."""
    want = _next_kinds(r.expected_next_kind)
    return bool(want) and not r.error and all(k in want for k in r.next_kind.split("/"))


def _agreement(rows: list[Row]) -> str:
    """'47 of 54 verdicts match the reading; ... Next right on 40; the invariants hold on 54 of 54 reports; ...'"""
    agree = sum(r.matches == "yes" for r in rows)
    sound = sum(not r.physics and r.matches != "error" and not r.error for r in rows)
    clean = sum(not r.broken_claims and not r.error for r in rows)
    return (f"{agree} of {len(rows)} verdicts match the reading (idle cause, regime and Next); "
            f"the Next is right on {sum(_next_right(r) for r in rows)} of {len(rows)}; "
            f"the invariants hold on {sound} of {len(rows)} reports; the claim checker is clean on {clean} of "
            f"{len(rows)}.")


def markdown(rows: list[Row]) -> str:
    lines = ["| trace (source) | device | torch | events | time | dominant idle | regime | Next | matches reading? "
             "| invariants |",
             "|---|---|---|---:|---:|---|---|---|---|---|"]
    for r in rows:
        verdict = r.matches if r.matches != "no" else f"no: {r.why_not}"
        physics = "hold" if not r.physics else "broken: " + "; ".join(r.physics)
        lines.append(f"| {r.file} ({r.source}) | {r.device} | {r.torch} | {r.events:,} | {r.seconds:.1f} s | "
                     f"{r.dominant} | {r.regime} | {r.next_kind} | {verdict} | {physics} |")
    lines.append("\n" + _agreement(rows))
    return "\n".join(lines)


def text_table(rows: list[Row]) -> str:
    out = [f"{'trace':44} {'device':26} {'events':>8} {'time':>6} {'dominant':16} {'regime':9} {'next':18} match"]
    for r in rows:
        out.append(f"{r.file[:44]:44} {r.device[:26]:26} {r.events:8d} {r.seconds:5.1f}s {r.dominant[:16]:16} "
                   f"{r.regime[:9]:9} {r.next_kind[:18]:18} {r.matches}{': ' + r.why_not if r.why_not else ''}"
                   + (f" [invariants: {'; '.join(r.physics)}]" if r.physics else "")
                   + (f" [claims: {'; '.join(r.broken_claims)}]" if r.broken_claims else ""))
    out.append(_agreement(rows))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("directory", type=Path)
    ap.add_argument("--readings", type=Path, default=READINGS)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", type=Path, help="also write every row to this file")
    ap.add_argument("--half", choices=("dev", "test"), help="only the traces of one half of the split")
    a = ap.parse_args(argv)
    if not a.directory.is_dir():
        print(f"error: {a.directory} is not a directory", file=sys.stderr)
        return 2
    rows = run(a.directory, load_readings(a.readings), a.half)
    print(markdown(rows) if a.markdown else text_table(rows))
    if a.json:
        a.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
