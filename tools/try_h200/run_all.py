"""`tracetriage try --repeats 3` on every script of tools/try_h200/, in one device call, inside one time budget.

    OUT=$OUT python3 tools/try_h200/run_all.py                      # on the H200, from the repo root
    OUT=/tmp/tryall DEVICE=cpu python tools/try_h200/run_all.py     # the plumbing, on a CPU (tiny sizes)

The repository is not pip-installed on the device machine. This driver makes it importable the way pyproject's
package-dir maps it (tracetriage.analyzers = analyzers/, tracetriage.capture = capture/, ...): a folder of links,
WORK-pkg/tracetriage (tools/pkglink.py, as capture/record_realworld.sh makes it too), first on PYTHONPATH, so that
`try` and every child it starts (each with -P) import the working tree.
The parent's analysis needs msgspec and isal, which the device's Python lacks: carry them as wheels (the
device notes say how) and put them on PYTHONPATH before this runs; the driver checks every import it needs
first and says in one line what is missing. The trace cache stays off (TRACETRIAGE_NO_CACHE: no pyarrow).

Each script gets a share of what is left of the budget (--budget, default 540 s, BUDGET in the environment)
by its weight, less a reserve for the tarballs; `try` gets that share as its --timeout, less a margin for its
own analysis, and is killed, with its children, past the share. A script whose share would be under
MIN_SCRIPT_S is not run (the budget's cut, not a failure); so is one whose library is missing.

Writes into $OUT (at most 5 files, each under 15 MiB):
    try-TAG.log               everything printed (also on stdout)
    try-TAG.md                the summary (predicted beside measured, per knob) and each script's table
    try-TAG.json              {"env", "scripts": {NAME: {"status", "try": the try --json object}}}
    try-TAG-tables.tar.gz     try-TAG/NAME/try.{json,txt,md}, the runs' logs and results, the prediction log
                              and `tracetriage predictions` on it
    try-TAG-traces.tar.gz     try-TAG/NAME/*.json.gz: the before and after traces, as many as fit in 14 MiB
                              (before traces and each knob's first after trace first)
TAG is h200 on a GPU, cpu otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:       # this parent only, for tools.pkglink: its children get the links alone
    sys.path.insert(0, str(ROOT))

from tools.pkglink import link_package  # noqa: E402

MIN_SCRIPT_S = 45          # a share under this cannot hold a first capture and one knob's runs on the H200
ANALYSIS_MARGIN_S = 20     # try's own work after its last run: the trace of that run measured, the tables
TAR_RESERVE_S = 20         # the tarballs and the prediction log's table at the end
TRACES_LIMIT = 14 << 20    # a file back from the device may be 16 MiB
PARENT_NEEDS = ("numpy", "msgspec", "isal", "torch")


@dataclass(frozen=True)
class Script:
    name: str
    knobs: tuple[str, ...]     # the knobs to turn (--knob): of those the report proposes, only these
    weight: float              # its share of the budget against the others'
    needs: tuple[str, ...] = ()


# The order they run in: the two knobs whose predictions missed most on the last H200 run first, then the
# new real-library workloads, then the rest.
SCRIPTS = (
    Script("loader", ("dataloader_workers", "pin_memory"), 1.0),
    Script("adamw_foreach", ("fused_adamw", "zero_grad_to_none"), 1.0),
    Script("hf_gpt2_train", ("allow_tf32", "autocast_bf16"), 1.4, needs=("transformers",)),
    Script("compiled_mlp_adamw", ("fused_adamw", "zero_grad_to_none"), 1.3),
    Script("tf32_mlp", ("allow_tf32", "autocast_bf16"), 1.2),
    Script("resnet_train", ("cudnn_benchmark", "autocast_bf16"), 1.1, needs=("torchvision",)),
)


class Log:
    def __init__(self, path: Path):
        self.f = open(path, "a", encoding="utf-8")

    def __call__(self, *parts) -> None:
        line = " ".join(str(p) for p in parts)
        print(line, flush=True)
        self.f.write(line + "\n")
        self.f.flush()


def environment(pkg: Path) -> dict:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TRACETRIAGE_NO_CACHE": "1"}
    # the links only, never the repo root (tools/pkglink.py says why); the children run with -P
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(pkg), os.environ.get("PYTHONPATH", "")) if p)
    return env


def missing(modules, env: dict, cwd: Path) -> list[str]:
    """The modules that do not import in the environment the runs get (each tried in a fresh process)."""
    out = []
    for m in modules:
        p = subprocess.run([sys.executable, "-P", "-c", f"import {m}"], env=env, cwd=cwd, capture_output=True,
                           text=True)
        if p.returncode != 0:
            out.append(m)
    return out


def versions(env: dict, cwd: Path) -> dict:
    code = ("import json, sys, torch\n"
            "v = {'python': sys.version.split()[0], 'torch': torch.__version__,\n"
            "     'gpu': torch.cuda.get_device_name() if torch.cuda.is_available() else None}\n"
            "for m in ('transformers', 'torchvision', 'triton'):\n"
            "    try:\n"
            "        v[m] = __import__(m).__version__\n"
            "    except Exception as e:\n"
            "        v[m] = 'missing (' + type(e).__name__ + ')'\n"
            "print(json.dumps(v))\n")
    p = subprocess.run([sys.executable, "-P", "-c", code], env=env, cwd=cwd, capture_output=True, text=True)
    # (a library may print before the JSON: huggingface_hub does when an optional import fails)
    v = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else {"error": p.stderr.strip()[-300:]}
    g = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    v["commit"] = g.stdout.strip() if g.returncode == 0 else "unknown (no git here)"
    return v


def run_try(s: Script, share: float, args, env: dict, work: Path, log: Log) -> dict:
    out = work / s.name
    logs = work / "logs"
    cmd = [sys.executable, "-P", "-m", "tracetriage.cli", "try", "--repeats", str(args.repeats), "--json",
           "--timeout", f"{max(share - ANALYSIS_MARGIN_S, 10):.0f}", "--out", str(out),
           "--db", str(work / "log.sqlite3"), "--device", args.device]
    for k in s.knobs:
        cmd += ["--knob", k]
    cmd.append(str(HERE / f"{s.name}.py"))
    log(f"[{s.name}] share {share:.0f} s: {' '.join(cmd[2:])}")
    t0 = time.monotonic()
    with open(logs / f"{s.name}.stdout.json", "w") as so, open(logs / f"{s.name}.stderr.log", "w") as se:
        p = subprocess.Popen(cmd, env=env, cwd=work, stdout=so, stderr=se, start_new_session=True)
        try:
            rc = p.wait(timeout=share)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)       # try and the run it had started
            p.wait()
            rc = None
    took = time.monotonic() - t0
    saved = out / "try.json"
    if rc is None:
        status = f"not run: cut by the budget after {took:.0f} s (its share)"
    elif rc != 0 and not saved.exists():
        err = (logs / f"{s.name}.stderr.log").read_text(errors="replace").strip().splitlines()
        said = next((x for x in reversed(err) if x.startswith("error:")), err[-1] if err else "")
        cut = "budget ran out" in said          # its first capture outlasted its share: the budget's cut
        status = f"not run: cut by the budget ({said})" if cut else f"failed (exit {rc}): {said}"
    else:
        status = "ran"
    result = {"status": status, "seconds": round(took, 1), "knobs_asked": list(s.knobs)}
    if saved.exists() and rc is not None:
        result["try"] = json.loads(saved.read_text())
    log(f"[{s.name}] {status} in {took:.0f} s")
    for line in summary_lines(s.name, result):
        log("  " + line)
    return result


def pct(x) -> str:
    return "—" if x is None else f"{-100 * x:+.0f}%"


def measured(m) -> str:
    if m is None:
        return "—"
    return pct(m["median"]) + (f" [{pct(m['high'])}, {pct(m['low'])}] ×{m['runs']}" if m["runs"] > 1 else " ×1")


def summary_lines(name: str, r: dict) -> list[str]:
    t = r.get("try")
    if not t:
        return []
    rows = []
    for k in t["knobs"]:
        p, m = k["predicted"], k["measured"]
        rows.append(f"{k['knob']}: predicted {pct(p['profiled'])} / {pct(p['unprofiled'])}, measured "
                    f"{measured(m['profiled'])} / {measured(m['unprofiled'])}: {k['verdict_words']}")
    if t.get("left_out"):
        rows.append("proposed, not turned here: " + ", ".join(t["left_out"]))
    if not t["knobs"]:
        rows.append("no knob of those asked was proposed")
    if t.get("stopped"):
        rows.append(f"stopped early: {t['stopped']}")
    return rows


def markdown(results: dict, env: dict, work: Path) -> str:
    lines = ["# tracetriage try on every script of tools/try_h200/", "",
             f"{env.get('gpu') or 'CPU'}, torch {env.get('torch')}, transformers {env.get('transformers')}, "
             f"torchvision {env.get('torchvision')}, commit {env.get('commit')}", "",
             "| script | knob | predicted (profiled / unprofiled) | measured profiled (median [range] ×runs) | "
             "measured unprofiled | verdict |", "| --- | --- | --- | --- | --- | --- |"]
    for name, r in results.items():
        t = r.get("try")
        if not t or not t["knobs"]:
            lines.append(f"| {name} | — | — | — | — | {r['status']} |")
            continue
        for k in t["knobs"]:
            p, m = k["predicted"], k["measured"]
            lines.append(f"| {name} | {k['knob']} | {pct(p['profiled'])} / {pct(p['unprofiled'])} | "
                         f"{measured(m['profiled'])} | {measured(m['unprofiled'])} | {k['verdict_words']} |")
    for name in results:
        table = work / name / "try.md"
        if table.exists():
            lines += ["", f"## {name}", "", table.read_text().rstrip()]
    return "\n".join(lines) + "\n"


def trace_order(work: Path, results: dict) -> list[Path]:
    """The traces, before traces and each knob's first after trace first, then the rest."""
    first, rest = [], []
    for name in results:
        for p in sorted((work / name).glob("*.json.gz")):
            (first if p.name.startswith("first-capture") or "-profiled-0." in p.name else rest).append(p)
    return first + rest


def write_tars(work: Path, tag: str, results: dict, out: Path, log: Log) -> None:
    top = f"try-{tag}"
    with tarfile.open(out / f"{top}-tables.tar.gz", "w:gz") as tar:
        for p in sorted(work.rglob("*")):
            if p.is_file() and not p.name.endswith(".json.gz") and not p.parent.name.endswith(".inductor"):
                tar.add(p, arcname=f"{top}/{p.relative_to(work)}")
    kept, skipped, size = [], [], 0
    for p in trace_order(work, results):
        n = p.stat().st_size
        if size + n > TRACES_LIMIT:
            skipped.append(p.name)
            continue
        kept.append(p)
        size += n
    with tarfile.open(out / f"{top}-traces.tar.gz", "w:gz") as tar:
        for p in kept:
            tar.add(p, arcname=f"{top}/{p.relative_to(work)}")
            generated = p.with_name(p.name.removesuffix(".json.gz") + ".inductor")   # Inductor's code, with stacks
            if generated.is_dir():
                tar.add(generated, arcname=f"{top}/{generated.relative_to(work)}")
    log(f"traces: {len(kept)} kept ({size / 2**20:.1f} MiB)" + (f", {len(skipped)} left out to stay under "
                                                                 f"{TRACES_LIMIT >> 20} MiB" if skipped else ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT"), help="where the results go (default: $OUT)")
    ap.add_argument("--budget", type=float, default=float(os.environ.get("BUDGET", 540)),
                    help="seconds for everything, the tarballs included (default 540, or $BUDGET)")
    ap.add_argument("--repeats", type=int, default=int(os.environ.get("REPEATS", 3)))
    ap.add_argument("--device", default=os.environ.get("DEVICE", "cuda"), choices=("cuda", "cpu"))
    ap.add_argument("--only", default="", help="comma-separated script names (default: all)")
    ap.add_argument("--work", default=None, help="scratch folder (default: a fresh one under /tmp)")
    args = ap.parse_args(argv)
    if not args.out:
        print("error: set OUT (or --out) to the folder for the results", file=sys.stderr)
        return 2
    start = time.monotonic()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = "h200" if args.device == "cuda" else "cpu"
    work = Path(args.work) if args.work else Path(f"/tmp/try-{tag}-{os.getpid()}")
    (work / "logs").mkdir(parents=True, exist_ok=True)
    log = Log(out / f"try-{tag}.log")
    env = environment(link_package(Path(f"{work}-pkg")))
    gone = missing([*PARENT_NEEDS, "tracetriage.trial.command", "tracetriage.capture.knob_runner",
                    "tracetriage.analyzers.triage.report"], env, work)
    info = versions(env, work)
    log("env:", json.dumps(info))
    results: dict[str, dict] = {}
    if gone:
        log(f"error: these do not import here, so try cannot run: {', '.join(gone)} (carry msgspec and isal as "
            "wheels: tools/try_h200/run_all.py's docstring)")
        scripts: tuple[Script, ...] = ()
        results = {s.name: {"status": "not run: " + ", ".join(gone) + " missing"} for s in SCRIPTS}
    else:
        only = set(filter(None, args.only.split(",")))
        scripts = tuple(s for s in SCRIPTS if not only or s.name in only)
    for i, s in enumerate(scripts):
        lacks = missing(s.needs, env, work)
        if lacks:
            results[s.name] = {"status": f"not run: {', '.join(lacks)} missing here"}
            log(f"[{s.name}] {results[s.name]['status']}")
            continue
        left = args.budget - TAR_RESERVE_S - (time.monotonic() - start)
        waiting = scripts[i:]
        share = left * s.weight / sum(w.weight for w in waiting)
        if share < MIN_SCRIPT_S:
            share = min(left, MIN_SCRIPT_S)        # the last ones may take what the others left
        if share < MIN_SCRIPT_S:
            results[s.name] = {"status": f"not run: the budget was spent ({left:.0f} s left of {args.budget:.0f})"}
            log(f"[{s.name}] {results[s.name]['status']}")
            continue
        results[s.name] = run_try(s, share, args, env, work, log)
    db = work / "log.sqlite3"
    if db.exists():
        p = subprocess.run([sys.executable, "-P", "-m", "tracetriage.cli", "predictions", "--db", str(db)], env=env,
                           cwd=work, capture_output=True, text=True)
        (work / "predictions.txt").write_text(p.stdout + p.stderr)
    (out / f"try-{tag}.json").write_text(json.dumps({"env": info, "budget_s": args.budget, "repeats": args.repeats,
                                                     "scripts": results}, indent=2) + "\n")
    (out / f"try-{tag}.md").write_text(markdown(results, info, work))
    write_tars(work, tag, results, out, log)
    ran = sum(r["status"] == "ran" for r in results.values())
    log(f"done in {time.monotonic() - start:.0f} s of {args.budget:.0f}: {ran} of {len(SCRIPTS)} scripts ran; "
        f"files in {out}: " + ", ".join(sorted(p.name for p in out.iterdir())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
