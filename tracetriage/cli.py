"""`tracetriage`: capture, report, diff, whatif, annotate, dashboard, drill, predict.

Each subcommand imports only what it needs: `report`, `diff`, `whatif` and `drill` never
import torch, triton or streamlit (their import alone costs seconds). A user
error prints one line `error: ...` on stderr and exits 2, never a traceback.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

EXIT_USER_ERROR = 2


class UserError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


def _print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False, default=_json_default) + "\n")


def _json_default(o):
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


# --- report / diff -------------------------------------------------------------------

def cmd_report(a) -> int:
    from analyzers.voice.report import analysis_caveats, five_lines, hta_text
    from analyzers.output import serialize
    from analyzers.loading.progress import set_quiet
    from analyzers.triage.report import analyze_file
    from analyzers.model.trace import TraceError

    set_quiet(a.quiet)
    path = Path(a.trace)
    if path.is_dir():
        if a.range or a.hta:
            raise UserError("--range and --hta apply to one trace file, not to a directory of ranks")
        return _report_dir(path, a.json, a.quiet)
    try:
        analysis = analyze_file(path, a.range)
    except TraceError as e:
        raise UserError(str(e)) from None
    hta = None
    if a.hta:
        from analyzers.tools.hta_reference import HtaUnavailable, run_hta

        try:
            hta = run_hta(path).to_dict()
        except (HtaUnavailable, FileNotFoundError) as e:
            hta = {"error": str(e)}
    if a.json:
        out = serialize.report(analysis)
        if hta is not None:
            out["hta"] = hta
        _print_json(out)
        return 0
    print("\n".join(five_lines(analysis)))
    for c in analysis_caveats(analysis):
        print(f"Caveat: {c}.")
    if hta is not None:
        print(hta_text(hta, analysis))
    return 0


def _report_dir(path: Path, as_json: bool, quiet: bool) -> int:
    """`tracetriage report DIR`: the multi-rank report."""
    from analyzers.voice.ranks import ranks_lines
    from analyzers.output import serialize
    from tracetriage.rank_run import report_object
    from analyzers.model.trace import TraceError

    try:
        rr = report_object(path, progress=None if quiet or not sys.stderr.isatty() else _rank_progress)
    except TraceError as e:
        raise UserError(str(e)) from None
    if as_json:
        _print_json(serialize.ranks(rr))
    else:
        print("\n".join(ranks_lines(rr)))
    return 0


def _rank_progress(done: int, total: int) -> None:
    sys.stderr.write(f"\ranalysing ranks: {done}/{total}" + ("\n" if done == total else ""))
    sys.stderr.flush()


def cmd_diff(a) -> int:
    from analyzers.voice.diff import diff_lines
    from analyzers.output import serialize
    from analyzers.triage.diff import diff_files
    from analyzers.model.trace import TraceError

    try:
        d = diff_files(a.before, a.after)
    except TraceError as e:
        raise UserError(str(e)) from None
    if a.json:
        _print_json(serialize.diff(d))
    else:
        print("\n".join(diff_lines(d)))
    return 0


# --- whatif (analyzers/whatif/) ----------------------------------------------------------

def cmd_whatif(a) -> int:
    from analyzers.voice.whatif import whatif_table
    from analyzers.output import serialize
    from analyzers.whatif import predict as whatif
    from analyzers.model.trace import TraceError
    from analyzers.whatif.levers import LEVERS

    narrowing = [name for name, spec in LEVERS.items() if spec.takes_only]
    if a.only and a.lever and not set(narrowing) & set(a.lever):
        raise UserError(f"--only limits {' and '.join(narrowing)}; add --lever {narrowing[0]} (or leave --lever out)")
    try:
        w = whatif.predict_file(a.trace, levers=a.lever, only=a.only)
    except (TraceError, whatif.WhatIfError) as e:
        raise UserError(str(e)) from None
    if a.json:
        _print_json(serialize.whatif(w))
    else:
        print(whatif_table(w))
    return 0


# --- capture ----------------------------------------------------------------------------

def _parse_set(items: list[str]) -> dict:
    out = {}
    for it in items or []:
        if "=" not in it:
            raise UserError(f"--set expects key=value, got {it!r}")
        k, v = it.split("=", 1)
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


def cmd_capture(a) -> int:
    if a.device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")  # Triton kernels then run on the CPU
    if a.workload == "list":
        from capture.presets import PRESETS

        for p in PRESETS.values():
            label = p.idle_cause or "-"
            print(f"{p.name:30s} {label:16s} {p.regime or '-':9s} {p.about}")
        return 0
    import torch

    if a.device == "cuda" and not torch.cuda.is_available():
        raise UserError("no CUDA device here; pass --device cpu to capture on the CPU")
    if a.workload == "ceilings":
        from capture.ceilings import measure_and_save

        result, path = measure_and_save(a.device, a.out)
        print(json.dumps(result, indent=2))
        print(f"saved to {path}", file=sys.stderr)
        return 0
    if a.workload == "script":
        from capture.script import capture_script

        if not a.args:
            raise UserError("capture script needs a path: tracetriage capture script train.py [args]")
        script, rest = a.args[0], a.args[1:]
        out = Path(a.out or Path(script).stem + ".json.gz")
        try:
            capture_script(script, rest, out)
        except FileNotFoundError as e:
            raise UserError(str(e)) from None
        print(f"wrote {out}")
        return 0
    from capture.harness import capture_workload
    from capture.presets import CPU_OVERRIDES, get

    try:
        preset = get(a.workload)
    except KeyError as e:
        raise UserError(str(e.args[0])) from None
    more = dict(CPU_OVERRIDES.get(preset.workload, {})) if a.device == "cpu" else {}
    more.update(_parse_set(a.set))
    if a.steps:
        more["steps"] = a.steps
    try:
        wl = preset.build(a.device, **more)
    except TypeError as e:
        raise UserError(f"bad --set for {a.workload}: {e}") from None
    out = Path(a.out or f"{a.workload}.json.gz")
    meta = capture_workload(wl, out, name=preset.name, label=preset.label())
    t = meta["timing_per_step"]
    print(f"wrote {out} ({meta['trace_bytes_gz'] / 1e6:.2f} MB) and its sidecar; one step takes "
          f"{t['median_ms']:.3f} ms (median of {t['repeats']}, spread {t['spread_pct']:.0f}%) on {meta['device']['name']}")
    return 0


# --- drills and the prediction log (implementation: drills/commands.py) --------------------------

def _drills_call(fn, *args) -> int:
    from drills.commands import USER_ERRORS

    try:
        return fn(*args)
    except USER_ERRORS as e:
        raise UserError(str(e)) from None


def cmd_drill(a) -> int:
    from drills import commands as dc

    if a.action == "list":
        return _drills_call(dc.drill_list, a.json)
    if not a.id:
        raise UserError(f"drill {a.action} needs a drill id (see tracetriage drill list)")
    if a.action == "show":
        return _drills_call(dc.drill_show, a.id, a.json, a.reveal)
    if not a.answers:
        raise UserError("drill grade needs --answers FILE (a TOML file; drill show ID lists its keys)")
    return _drills_call(dc.drill_grade, a.id, a.answers, a.json, a.db)


def cmd_predict(a) -> int:
    from drills import commands as dc

    return _drills_call(dc.predict, a.quantity, a.value, a.why, a.trace, a.baseline, a.db)


def cmd_predictions(a) -> int:
    from drills import commands as dc

    return _drills_call(dc.predictions, a.json, a.db, a.measure, a.baseline)


def _drill_parsers(sub) -> None:
    dr = sub.add_parser("drill", help="graded timeline drills: list, show ID, grade ID --answers FILE")
    dr.add_argument("action", choices=["list", "show", "grade"])
    dr.add_argument("id", nargs="?")
    dr.add_argument("--answers", help="the answer file (TOML) for grade")
    dr.add_argument("--json", action="store_true")
    dr.add_argument("--reveal", action="store_true", help="show: mark the idle gaps by cause (gives the answer away)")
    dr.add_argument("--db", help="the prediction log that records attempts (default: the user data directory)")
    dr.set_defaults(fn=cmd_drill)
    pr = sub.add_parser("predict", help="record a prediction before you measure (see `predictions`)")
    pr.add_argument("quantity", help="span_ms, idle_share, kernel_busy_ms, gbps, tflops, intensity, ttft_ms, "
                                     "per_token_ms, speedup")
    pr.add_argument("value")
    pr.add_argument("--why", required=True, help="one sentence of reasoning")
    pr.add_argument("--trace", help="the trace that will measure it (measured once it exists)")
    pr.add_argument("--baseline", help="for speedup: the trace before the change")
    pr.add_argument("--db")
    pr.set_defaults(fn=cmd_predict)
    ps = sub.add_parser("predictions", help="predicted against measured, and the running calibration")
    ps.add_argument("--json", action="store_true")
    ps.add_argument("--measure", nargs=2, metavar=("ID", "TRACE"), help="attach a measurement from TRACE")
    ps.add_argument("--baseline", help="with --measure, for a speedup: the trace before")
    ps.add_argument("--db")
    ps.set_defaults(fn=cmd_predictions)


# --- dashboard / annotate (dashboard/launch.py, analyzers/annotate.py) ----------------------

def cmd_dashboard(a) -> int:
    from dashboard.launch import LaunchError, run

    try:
        return run(a.trace_or_dir, a.port, a.host)
    except LaunchError as e:
        raise UserError(str(e)) from None


def cmd_annotate(a) -> int:
    from analyzers.output.annotate import annotate_file
    from analyzers.model.trace import TraceError

    try:
        out, gaps = annotate_file(a.trace, a.out)
    except TraceError as e:
        raise UserError(str(e)) from None
    except OSError as e:
        raise UserError(f"cannot write {a.out}: {e.strerror or e}") from None
    print(f"wrote {out}: the trace plus a track of {gaps} idle gaps named by cause (open it in ui.perfetto.dev)")
    return 0


def _port(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 1 to 65535, got {n}")
    return n


def _dashboard_commands(sub) -> None:
    d = sub.add_parser("dashboard", help="the Streamlit dashboard: timeline, roofline, diff")
    d.add_argument("trace_or_dir", nargs="?", help="a trace to open, or a directory of traces to list")
    d.add_argument("--port", type=_port, help="the port to listen on (default 8501)")
    d.add_argument("--host", help="the address to listen on (default 127.0.0.1, this machine only; 0.0.0.0 serves "
                                  "every interface, and so your traces, to anyone who can reach it: no login)")
    d.set_defaults(fn=cmd_dashboard)
    n = sub.add_parser("annotate", help="write the trace with a track of idle gaps named by cause, for Perfetto UI")
    n.add_argument("trace")
    n.add_argument("-o", "--out", required=True, help="the annotated trace (.json.gz or .json)")
    n.set_defaults(fn=cmd_annotate)


# --- entry ----------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="tracetriage", description="Name the cause of every idle gap in a torch.profiler trace.")
    sub = ap.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("report", help="the five-line triage report of a trace (or a directory of rank traces)")
    r.add_argument("trace")
    r.add_argument("--json", action="store_true", help="print one JSON object and nothing else on stdout")
    r.add_argument("--range", help="restrict to a named range (record_function / named_range)")
    r.add_argument("--hta", action="store_true", help="add HTA's idle breakdown and launch stats beside ours")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.set_defaults(fn=cmd_report)

    d = sub.add_parser("diff", help="explain a change between two traces in time, launches, bytes and idle")
    d.add_argument("before")
    d.add_argument("after")
    d.add_argument("--json", action="store_true")
    d.set_defaults(fn=cmd_diff)

    w = sub.add_parser("whatif", help="predict what each fix would save (remove syncs, CUDA graphs, ...) from the trace")
    w.add_argument("trace")
    w.add_argument("--json", action="store_true", help="print one JSON object and nothing else on stdout")
    from analyzers.whatif.levers import LEVERS

    w.add_argument("--lever", nargs="+", action="extend", metavar="NAME",
                   help="only these levers: " + " ".join(LEVERS))
    w.add_argument("--only", metavar="OP", help=" and ".join(n for n, s in LEVERS.items() if s.takes_only)
                   + ": only the syncs called from this op, e.g. aten::item")
    w.set_defaults(fn=cmd_whatif)

    c = sub.add_parser("capture", help="profile a workload preset, `script PATH.py`, `ceilings`, or `list`")
    c.add_argument("workload", help="a preset name (see `capture list`), 'script', 'ceilings' or 'list'")
    c.add_argument("args", nargs=argparse.REMAINDER, help="for `script`: the script and its arguments")
    _capture_options(c)
    c.set_defaults(fn=cmd_capture)

    _drill_parsers(sub)
    _dashboard_commands(sub)
    return ap


def _capture_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default=None, choices=["cuda", "cpu"])
    p.add_argument("--out")
    p.add_argument("--steps", type=int)
    p.add_argument("--set", nargs="*", metavar="KEY=VALUE", help="override workload fields, e.g. --set n=4096")


def _options_after_workload(a) -> None:
    """`capture PRESET --out x.json.gz`: options after the preset name land in the script-args remainder;
    for anything but `script` they are capture options (silently ignoring --out wrote the file elsewhere)."""
    if a.cmd != "capture" or a.workload == "script" or not a.args:
        return
    p = argparse.ArgumentParser(prog=f"tracetriage capture {a.workload}", add_help=False)
    _capture_options(p)
    extra, unknown = p.parse_known_args(a.args)
    if unknown:
        raise UserError(f"unexpected arguments after {a.workload}: {' '.join(unknown)} "
                        "(only `capture script PATH.py` takes arguments of its own)")
    for k, v in vars(extra).items():
        if v is not None:
            setattr(a, k, v)
    a.args = []


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    a = ap.parse_args(argv)
    try:
        _options_after_workload(a)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USER_ERROR
    if a.cmd == "capture" and a.device is None:
        a.device = "cuda" if _cuda_available() else "cpu"
    try:
        return a.fn(a)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return 130
    except MemoryError:
        print("error: out of memory while analysing the trace; run it on a machine with more memory, or capture "
              "a shorter window (fewer steps, or a profiler schedule with active=1)", file=sys.stderr)
        return EXIT_USER_ERROR
    except BrokenPipeError:  # `tracetriage report x | head`
        return 0
    except Exception as e:  # a bug, not bad input: still one line unless asked for the traceback
        if os.environ.get("TRACETRIAGE_DEBUG"):
            raise
        print(f"error: internal failure ({type(e).__name__}: {e}); rerun with TRACETRIAGE_DEBUG=1 for the traceback",
              file=sys.stderr)
        return 1


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


if __name__ == "__main__":
    sys.exit(main())
