"""`tracetriage`: capture, report, diff, whatif, annotate, dashboard, drill, predict.

Each subcommand imports only what it needs: `report`, `diff`, `whatif` and `drill` never
import torch, triton or streamlit (their import alone costs seconds). A user
error prints one line `error: ...` on stderr and exits 2, never a traceback.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from pathlib import Path

from tracetriage import dataclass_code
from tracetriage.analyzers.loading.formats import trace_stem

EXIT_GATE_FAILED = 1     # --fail-if-slower / --fail-if-idle-above: the gate failed (CI)
EXIT_USER_ERROR = 2
EXIT_INTERNAL = 3        # a bug, not the user's input nor a gate


class UserError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with the house's error convention: a bad option or value is one `error:` line that names the
    command's --help, not several lines of usage first (argparse's own format)."""

    def error(self, message: str):
        print(f"error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        sys.exit(EXIT_USER_ERROR)


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

def _gate_pct(text: str | None, flag: str, at_most: float = float("inf")) -> float | None:
    """A gate's percentage; `at_most` where a larger one could never fail (an idle share above 100%)."""
    if text is None:
        return None
    try:
        pct = float(text.rstrip("%"))
    except ValueError:
        raise UserError(f"{flag} takes a percentage, e.g. {flag} 5; got {text!r}") from None
    if not 0 <= pct < float("inf"):
        raise UserError(f"{flag} takes a percentage of 0 or more, got {text}")
    if pct >= at_most:
        raise UserError(f"{flag} {text} can never fail (the GPU is idle at most 100% of the span): "
                        f"give a percentage below {at_most:g}")
    return pct


def _gate_exit(g, line: str | None) -> int:
    """The gate's one line on stderr (stdout keeps the report), and its exit code (0 when no gate was asked for)."""
    if g is None or line is None:
        return 0
    print(line, file=sys.stderr)
    return EXIT_GATE_FAILED if g.failed else 0


def cmd_report(a) -> int:
    from tracetriage.analyzers.loading.read import wait_for_streamed_read

    # a large .gz read ahead: the analysis modules import once its gunzip and scan are over, beside its parse (one
    # thread), not beside them (two threads on two cores)
    wait_for_streamed_read(Path(a.trace))
    from tracetriage.analyzers.loading.merged import MergedRanks
    from tracetriage.analyzers.loading.progress import set_quiet
    from tracetriage.analyzers.model.trace import TraceError
    from tracetriage.analyzers.output import serialize
    from tracetriage.analyzers.triage.report import analyze_file
    from tracetriage.analyzers.voice.health import health_line
    from tracetriage.analyzers.voice.hta_words import hta_text
    from tracetriage.analyzers.voice.report import analysis_caveats, five_lines

    set_quiet(a.quiet)
    fmt = _format(a)
    limit = _gate_pct(a.fail_if_idle_above, "--fail-if-idle-above", at_most=100)
    if a.range is not None and not a.range.strip():
        raise UserError("--range needs the name of a range (record_function / named_range); "
                        "`tracetriage report TRACE` lists the trace's ranges on its Time line")
    if a.trace == "-":
        raise UserError("report reads a trace file, not standard input (a trace is read twice: once to sniff its "
                        "format, once to decode it): save it first, e.g. `... > trace.json.gz`, then "
                        "`tracetriage report trace.json.gz`")
    path = Path(a.trace)
    scheduler = a.scheduler or os.environ.get("TRACETRIAGE_SCHEDULER") or None
    if a.scheduler and path.is_file():
        raise UserError("--scheduler applies to a directory of rank traces, not to one trace file")
    # a URL, or with a scheduler a directory only the cluster may see, is a run's directory: its workers list it
    elsewhere = scheduler and not path.exists() and trace_stem(a.trace) is None
    if path.is_dir() or _is_url(a.trace) or elsewhere:
        if a.range or a.hta or a.graph_capture or limit is not None:
            raise UserError("--range, --hta, --graph-capture and --fail-if-idle-above apply to one trace file, not "
                            "to a directory of ranks")
        return _report_dir(a.trace if _is_url(a.trace) else path, fmt, a.quiet, scheduler)
    try:
        try:
            analysis = analyze_file(path, a.range, a.graph_capture)
        except MergedRanks as m:   # one file holding several ranks: report them like a directory of ranks
            if a.range or a.hta or limit is not None:
                raise UserError(f"{m}; --range, --hta and --fail-if-idle-above apply to one rank's trace") from None
            return _report_dir(path, fmt, a.quiet, merged=m.trace)
        gate = _idle_gate(analysis, limit)
    except TraceError as e:
        raise UserError(str(e)) from None
    from tracetriage.analyzers.voice.gate import idle_line

    gate_line = idle_line(gate) if gate else None
    if fmt == "markdown":
        from tracetriage.analyzers.voice.markdown import report_markdown

        sys.stdout.write(report_markdown(analysis, gate_line))
        return _gate_exit(gate, gate_line)
    hta = None
    if a.hta:
        from tracetriage.analyzers.output.hta import HtaUnavailable, run_hta

        try:
            hta = run_hta(path).to_dict()
        except (HtaUnavailable, FileNotFoundError) as e:
            hta = {"error": str(e)}
    if fmt == "json":
        out = serialize.report(analysis)
        if hta is not None:
            out["hta"] = hta
        _print_json(out)
    else:
        print("\n".join(five_lines(analysis)))
        health = health_line(analysis.health)
        if health:
            print(health)
        for c in analysis_caveats(analysis):
            print(f"Caveat: {c}.")
        if hta is not None:
            print(hta_text(hta, analysis))
    return _gate_exit(gate, gate_line)


def _idle_gate(analysis, limit: float | None):
    if limit is None:
        return None
    from tracetriage.analyzers.triage.gate import idle_above

    return idle_above(analysis, limit)


def _format(a) -> str:
    """--format, with --json its old spelling."""
    if getattr(a, "json", False):
        if a.format not in (None, "json"):
            raise UserError(f"--json and --format {a.format} disagree: give one")
        return "json"
    return a.format or "text"


def _report_dir(path: Path | str, fmt: str, quiet: bool, scheduler: str | None = None, merged=None) -> int:
    """`tracetriage report DIR [--scheduler local|ADDRESS]` (or a merged multi-rank file, `merged` its loaded
    trace): the multi-rank report."""
    from tracetriage.analyzers.model.trace import TraceError
    from tracetriage.analyzers.output import serialize
    from tracetriage.analyzers.runs.pool import report_object
    from tracetriage.analyzers.voice.ranks import ranks_lines

    try:
        rr = report_object(path, progress=None if quiet or not sys.stderr.isatty() else _rank_progress,
                           scheduler=scheduler, trace=merged)
    except TraceError as e:
        raise UserError(str(e)) from None
    if fmt == "json":
        _print_json(serialize.ranks(rr))
    elif fmt == "markdown":
        from tracetriage.analyzers.voice.markdown import ranks_markdown

        sys.stdout.write(ranks_markdown(rr))
    else:
        print("\n".join(ranks_lines(rr)))
    return 0


def _is_url(target: str) -> bool:
    from tracetriage.analyzers.runs.sources import is_url

    return is_url(target)


def _rank_progress(done: int, total: int) -> None:
    sys.stderr.write(f"\ranalysing ranks: {done}/{total}" + ("\n" if done == total else ""))
    sys.stderr.flush()


def cmd_diff(a) -> int:
    from tracetriage.analyzers.loading.progress import set_quiet
    from tracetriage.analyzers.model.trace import TraceError
    from tracetriage.analyzers.output import serialize
    from tracetriage.analyzers.triage.diff import diff_files
    from tracetriage.analyzers.voice.diff import diff_lines

    set_quiet(a.quiet)
    fmt = _format(a)
    limit = _gate_pct(a.fail_if_slower, "--fail-if-slower")
    try:
        d = diff_files(a.before, a.after)
        gate = None
        if limit is not None:
            from tracetriage.analyzers.triage.gate import slower

            gate = slower(d, limit)
    except TraceError as e:
        raise UserError(str(e)) from None
    from tracetriage.analyzers.voice.gate import slower_line

    gate_line = slower_line(gate) if gate else None
    if fmt == "json":
        _print_json(serialize.diff(d))
    elif fmt == "markdown":
        from tracetriage.analyzers.voice.markdown import diff_markdown

        sys.stdout.write(diff_markdown(d, gate_line))
    else:
        print("\n".join(diff_lines(d)))
    return _gate_exit(gate, gate_line)


# --- whatif (analyzers/whatif/) ----------------------------------------------------------

def cmd_whatif(a) -> int:
    from tracetriage.analyzers.loading.progress import set_quiet
    from tracetriage.analyzers.model.trace import TraceError
    from tracetriage.analyzers.output import serialize
    from tracetriage.analyzers.voice.whatif import whatif_table
    from tracetriage.analyzers.whatif import predict as whatif
    from tracetriage.analyzers.whatif.levers import LEVERS

    set_quiet(a.quiet)
    narrowing = [name for name, spec in LEVERS.items() if spec.takes_only]
    if a.only and a.lever and not set(narrowing) & set(a.lever):
        raise UserError(f"--only limits {' and '.join(narrowing)}; add --lever {narrowing[0]} (or leave --lever out)")
    try:
        w = whatif.predict_file(a.trace, levers=a.lever, only=a.only)
    except (TraceError, whatif.WhatIfError) as e:
        raise UserError(str(e)) from None
    fmt = _format(a)
    if fmt == "json":
        _print_json(serialize.whatif(w))
    elif fmt == "markdown":
        from tracetriage.analyzers.voice.markdown import whatif_markdown

        sys.stdout.write(whatif_markdown(w))
    else:
        print(whatif_table(w))
    return 0


def cmd_schema(a) -> int:
    """`tracetriage schema report|diff|whatif`: the JSON Schema of that command's --json."""
    from tracetriage.analyzers.output.schema import schema

    _print_json(schema(a.kind))
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
        from tracetriage.capture.presets import PRESETS

        for p in PRESETS.values():
            label = p.idle_cause or "-"
            print(f"{p.name:30s} {label:16s} {p.regime or '-':9s} {p.about}")
        print("\n(idle cause and regime: what a GPU capture shows.) `tracetriage capture PRESET --help` lists a "
              "preset's fields, for --set KEY=VALUE, with their defaults on a GPU and on the CPU.")
        return 0
    if getattr(a, "help", False):  # `capture PRESET --help`: its fields and defaults (needs no device)
        print("\n".join(_preset(a.workload).help_lines()))
        return 0
    import torch

    if a.device == "cuda" and not torch.cuda.is_available():
        raise UserError("no CUDA device here; pass --device cpu to capture on the CPU")
    if a.workload == "ceilings":
        from tracetriage.capture.ceilings import measure_and_save

        result, path = measure_and_save(a.device, a.out)
        print(json.dumps(result, indent=2))
        print(f"saved to {path}", file=sys.stderr)
        return 0
    if a.workload == "script":
        return _capture_script(a)
    from tracetriage.capture.fields import FieldError
    from tracetriage.capture.harness import capture_workload
    from tracetriage.capture.workload import ParameterError

    preset = _preset(a.workload)
    more = _parse_set(a.set)
    if a.steps:
        more["steps"] = a.steps
    try:
        wl = preset.build(a.device, **more)
    except FieldError as e:
        raise UserError(str(e)) from None
    except ModuleNotFoundError as e:
        if e.name != "triton":
            raise
        raise UserError(f"{preset.name} needs Triton, which is not installed: "
                        "pip install 'tracetriage[kernels]'") from None
    out = Path(a.out or f"{a.workload}.json.gz")
    try:
        meta = capture_workload(wl, out, name=preset.name, label=preset.label_on(a.device), stacks=a.stacks or "auto")
    except ParameterError as e:  # fields that do not fit together, found as the workload sets up
        raise UserError(f"{preset.name}: {e}") from None
    from tracetriage.analyzers.model.units import duration_us, share, size

    t = meta["timing_per_step"]
    print(f"wrote {out} ({size(meta['trace_bytes_gz'])}) and its sidecar; one step takes "
          f"{duration_us(t['median_ms'] * 1e3)} (median of {t['repeats']}, spread {share(t['spread_pct'] / 100)}) on "
          f"{meta['device']['name']}; "
          f"Python stacks {'on' if meta['stacks']['recorded'] else 'off'}: {meta['stacks']['why']}")
    return 0


def _preset(name: str):
    from tracetriage.capture.presets import get

    try:
        return get(name)
    except KeyError as e:
        raise UserError(str(e.args[0])) from None


def _capture_script(a) -> int:
    """`capture script PATH.py [args]`. The script's own exception is its author's bug: their traceback
    (from their first frame on, as Python prints it) and the script's exit status, never "internal failure"."""
    from tracetriage.capture.script import ScriptFailed, capture_script

    if not a.args:
        raise UserError("capture script needs a path: tracetriage capture script train.py [args]")
    script, rest = a.args[0], a.args[1:]
    out = Path(a.out or Path(script).stem + ".json.gz")
    try:
        stack = capture_script(script, rest, out, device=a.device, stacks=a.stacks or "auto")
    except FileNotFoundError as e:
        raise UserError(str(e)) from None
    except ScriptFailed as e:
        sys.stderr.write(e.traceback_text)
        kept = f" ({out} is as it was)" if out.exists() else ""
        print(f"error: {e}; no trace was written{kept}", file=sys.stderr)
        return e.exit_code
    print(f"wrote {out}; Python stacks {'on' if stack.on else 'off'}: {stack.why}")
    return 0


# --- drills and the prediction log (implementation: drills/commands.py) --------------------------

def _drills_call(fn, *args) -> int:
    from tracetriage.drills.commands import USER_ERRORS

    try:
        return fn(*args)
    except USER_ERRORS as e:
        raise UserError(str(e)) from None


def cmd_drill(a) -> int:
    from tracetriage.drills import commands as dc

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
    from tracetriage.drills import commands as dc

    return _drills_call(dc.predict, a.quantity, a.value, a.why, a.trace, a.baseline, a.db)


def cmd_predictions(a) -> int:
    from tracetriage.drills import commands as dc

    return _drills_call(dc.predictions, a.json, a.db, a.measure, a.baseline)


def _drill_parsers(sub) -> None:
    dr = sub.add_parser("drill", help="graded timeline drills: list, show ID, grade ID --answers FILE")
    dr.add_argument("action", choices=["list", "show", "grade"], help="list the drills, show one, or grade an answer")
    dr.add_argument("id", nargs="?", help="the drill's id, e.g. M01.04-a (see `drill list`)")
    dr.add_argument("--answers", help="the answer file (TOML) for grade")
    dr.add_argument("--json", action="store_true", help="print one JSON object and nothing else on stdout")
    dr.add_argument("--reveal", action="store_true", help="show: mark the idle gaps by cause (gives the answer away)")
    dr.add_argument("--db", help="the prediction log that records attempts (default: the user data directory)")
    dr.set_defaults(fn=cmd_drill)
    from tracetriage.drills.quantities import table_lines

    pr = sub.add_parser("predict", help="record a prediction before you measure (see `predictions`)",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        epilog="quantities:\n" + "\n".join(table_lines()))
    pr.add_argument("quantity", help="what you predict: one of the quantities below")
    pr.add_argument("value", help="the predicted value, in the quantity's unit and within its valid values")
    pr.add_argument("--why", required=True, help="one sentence of reasoning")
    pr.add_argument("--trace", help="the trace that will measure it (measured once it exists)")
    pr.add_argument("--baseline", help="for speedup: the trace before the change")
    pr.add_argument("--db", help="the prediction log (default: $TRACETRIAGE_DB, else the user data directory)")
    pr.set_defaults(fn=cmd_predict)
    ps = sub.add_parser("predictions", help="predicted against measured, and the running calibration")
    ps.add_argument("--json", action="store_true", help="print one JSON object and nothing else on stdout")
    ps.add_argument("--measure", nargs=2, metavar=("ID", "TRACE"), help="attach a measurement from TRACE")
    ps.add_argument("--baseline", help="with --measure, for a speedup: the trace before")
    ps.add_argument("--db", help="the prediction log (default: $TRACETRIAGE_DB, else the user data directory)")
    ps.set_defaults(fn=cmd_predictions)


# --- dashboard / annotate (dashboard/launch.py, analyzers/output/annotate.py) ---------------

def cmd_dashboard(a) -> int:
    from tracetriage.dashboard.launch import LaunchError, run

    try:
        return run(a.trace_or_dir, a.port, a.host)
    except LaunchError as e:
        raise UserError(str(e)) from None


def cmd_annotate(a) -> int:
    from tracetriage.analyzers.loading.progress import set_quiet
    from tracetriage.analyzers.model.trace import TraceError
    from tracetriage.analyzers.output.annotate import annotate_file

    set_quiet(a.quiet)
    try:
        out, gaps = annotate_file(a.trace, a.out)
    except TraceError as e:
        raise UserError(str(e)) from None
    except OSError as e:
        raise UserError(f"cannot write {a.out}: {e.strerror or e}") from None
    from tracetriage.analyzers.model.units import count

    print(f"wrote {out}: the trace plus a track of {count(gaps, 'idle gap')} named by cause "
          f"(open it in ui.perfetto.dev)")
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
    n.add_argument("trace", help="the trace to annotate (.json or .json.gz, as torch.profiler writes it)")
    n.add_argument("-o", "--out", required=True, help="the annotated trace (.json.gz or .json)")
    _quiet_option(n)
    n.set_defaults(fn=cmd_annotate)


# --- entry ----------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="tracetriage", description="Name the cause of every idle gap in a torch.profiler trace.")
    ap.add_argument("--version", action=_Version, help="show the installed version and exit")
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=_Parser)

    r = sub.add_parser("report", help="the five-line triage report of a trace (or a directory of rank traces)")
    _report_arguments(r)
    r.set_defaults(fn=cmd_report)

    d = sub.add_parser("diff", help="explain a change between two traces in time, launches, bytes and idle")
    d.add_argument("before", help="the trace before the change")
    d.add_argument("after", help="the trace after the change")
    d.add_argument("--json", action="store_true", help="print one JSON object and nothing else on stdout")
    _output_options(d)
    _quiet_option(d)
    d.add_argument("--fail-if-slower", metavar="PCT",
                   help="CI gate: exit 1 when AFTER's GPU span is more than PCT%% longer than BEFORE's")
    d.set_defaults(fn=cmd_diff)

    w = sub.add_parser("whatif",
                       help="predict what each fix would save (remove syncs, CUDA graphs, ...) from the trace")
    w.add_argument("trace", help="a trace file (.json or .json.gz)")
    w.add_argument("--json", action="store_true", help="print one JSON object and nothing else on stdout")
    from tracetriage.analyzers.whatif.levers import LEVERS

    w.add_argument("--lever", nargs="+", action="extend", metavar="NAME",
                   help="only these levers: " + " ".join(LEVERS))
    w.add_argument("--only", metavar="OP", help=" and ".join(n for n, s in LEVERS.items() if s.takes_only)
                   + ": only the syncs called from this op, e.g. aten::item")
    _output_options(w)
    _quiet_option(w)
    w.set_defaults(fn=cmd_whatif)

    sc = sub.add_parser("schema", help="print the JSON Schema of report, diff or whatif --json")
    sc.add_argument("kind", choices=["report", "diff", "whatif"], help="the command whose --json to describe")
    sc.set_defaults(fn=cmd_schema)

    c = sub.add_parser("capture", help="profile a workload preset, `script PATH.py`, `ceilings`, or `list`")
    c.add_argument("workload", help="a preset name (see `capture list`; `capture PRESET --help` lists its fields), "
                                    "'script', 'ceilings' or 'list'")
    c.add_argument("args", nargs=argparse.REMAINDER, help="for `script`: the script and its arguments")
    _capture_options(c)
    c.set_defaults(fn=cmd_capture)

    _drill_parsers(sub)
    _dashboard_commands(sub)
    from tracetriage.trial.cli import add_parser as add_try  # `try SCRIPT`: tracetriage/trial

    add_try(sub)
    return ap


def _report_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("trace", help="a trace file (.json or .json.gz, as torch.profiler writes it), or a directory "
                                 "(or URL) of one trace per rank")
    r.add_argument("--json", action="store_true", help="print one JSON object and nothing else on stdout")
    r.add_argument("--range", help="restrict to a named range (record_function / named_range)")
    r.add_argument("--hta", action="store_true", help="add HTA's idle breakdown and launch stats beside ours")
    r.add_argument("--graph-capture", metavar="TRACE", help="a separate trace of the CUDA-graph captures this trace "
                   "replays (vLLM, SGLang): the replayed kernels are charged to the ops captured")
    _quiet_option(r)
    r.add_argument("--scheduler", metavar="local|ADDRESS",
                   help="a directory of ranks: analyse them on a Dask cluster (`local` starts one on this machine; "
                        "default $TRACETRIAGE_SCHEDULER, else a local process pool); DIR may be an s3://, gs:// "
                        "or file:// URL")
    _output_options(r)
    r.add_argument("--fail-if-idle-above", metavar="PCT",
                   help="CI gate: exit 1 when the GPU is idle more than PCT%% of the span "
                        "(one line on stderr says why)")


def _output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=["text", "json", "markdown"],
                   help="text (default), json (as --json) or markdown (tables for a pull-request comment)")


def _quiet_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quiet", action="store_true", help="no progress bar on stderr (shown on loads over a second)")


class _Version(argparse.Action):
    """--version, with the version looked up only when asked: importlib.metadata costs every command ~15 ms."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"tracetriage {_version()}")
        parser.exit()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tracetriage")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def _steps(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"at least 1 step, got {n}")
    return n


def _capture_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default=None, choices=["cuda", "cpu"],
                   help="where the workload runs (default: cuda when a GPU is visible, else cpu)")
    p.add_argument("--out", help="the trace to write (default: NAME.json.gz here; its sidecar NAME.meta.json "
                                 "beside it)")
    p.add_argument("--steps", type=_steps, help="profiled steps (default: the preset's own)")
    p.add_argument("--set", nargs="*", metavar="KEY=VALUE", help="override workload fields, e.g. --set n=4096")
    p.add_argument("--stacks", choices=["auto", "on", "off"],
                   help="Python stacks (source lines in the report): auto (default) keeps them on where they cost "
                        "at most 25%% of profiled step time, measured first; a script gets them on")


def _options_after_workload(a) -> None:
    """`capture PRESET --out x.json.gz`: options after the preset name land in the script-args remainder;
    for anything but `script` they are capture options (silently ignoring --out wrote the file elsewhere)."""
    if a.cmd != "capture" or a.workload == "script" or not a.args:
        return
    p = _Parser(prog=f"tracetriage capture {a.workload}", add_help=False)
    _capture_options(p)
    p.add_argument("-h", "--help", action="store_true")
    extra, unknown = p.parse_known_args(a.args)
    if unknown:
        raise UserError(f"unexpected arguments after {a.workload}: {' '.join(unknown)} "
                        "(only `capture script PATH.py` takes arguments of its own)")
    for k, v in vars(extra).items():
        if v is not None:
            setattr(a, k, v)
    a.args = []


def main(argv: list[str] | None = None) -> int:
    code = _main(argv)
    if argv is None:   # the command line's own process (a caller in Python passes argv, and goes on)
        _leave(code)
    return code


def _leave(code: int) -> None:
    """End the process at once with `code`, without the interpreter's teardown, which frees every object one by one
    (a report on a 300 MB trace: 0.04-0.1 s, on 2 cores), where the kernel frees the whole address space in one go.
    The exit handlers still run (atexit, weakref.finalize: temporary directories) and the standard streams are
    flushed. A process with a thread that is no daemon (its work is not done) exits the usual way, after it."""
    import atexit
    import threading

    if any(not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        return
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):   # (a reader that went away: `tracetriage report x | head`; a closed stream)
            pass
    os._exit(code)


class _ParseFailed(Exception):
    pass


class _SilentParser(argparse.ArgumentParser):
    def error(self, message: str):
        raise _ParseFailed(message)


def _parse_ahead(path: Path, box: list):
    """The load's decode, assemble and link of a text read ahead, run in the read-ahead's thread (numpy imported there,
    not before the thread starts)."""
    from tracetriage.analyzers.loading.load import parse_text

    return parse_text(path, box)


def _read_ahead_for(argv: list[str]) -> bool:
    """`report FILE`: start gunzipping FILE on the other core before anything else, while the parser is built
    (whatif's lever choices import every lever, numpy with them) and the analysis imports, and parse it there too
    where the stream scanned it (load takes the trace, or read_bytes the text; see tracetriage.analyzers.loading.read).
    The report's own options are read by a parser of them alone that says nothing: a command line it cannot read
    reads nothing ahead, and the real parser says why. Whether it started a read (a report of one file)."""
    if argv[:1] != ["report"]:
        return False
    p = _SilentParser(add_help=False)
    _report_arguments(p)
    try:
        a, _ = p.parse_known_args(argv[1:])
    except (_ParseFailed, argparse.ArgumentError):
        return False
    if a.scheduler:
        return False
    from tracetriage.analyzers.loading.read import read_ahead

    return read_ahead(Path(a.trace), parse=_parse_ahead)


def _numpy_without_blas_threads(argv: list[str]) -> None:
    """The analysing commands (report, diff, whatif) import numpy with OpenBLAS's worker threads off: tracetriage
    multiplies no matrices, and the threads OpenBLAS starts with numpy spin ~0.1 s waiting for work that never comes
    (~0.08 CPU-s, measured on this project's 2-core machine), while the read-ahead's gunzip and scan and the imports
    want both cores. OPENBLAS_NUM_THREADS=1 only while numpy loads (OpenBLAS reads it then): the caller's value is set
    back after, so child processes (a `try` script's) keep theirs."""
    if argv[:1] not in (["report"], ["diff"], ["whatif"]) or "numpy" in sys.modules:
        return
    before = os.environ.get("OPENBLAS_NUM_THREADS")
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        if before is None:
            del os.environ["OPENBLAS_NUM_THREADS"]
        else:
            os.environ["OPENBLAS_NUM_THREADS"] = before


def _main(argv: list[str] | None) -> int:
    one_file = _read_ahead_for(sys.argv[1:] if argv is None else argv)
    # `report FILE` runs without the cyclic garbage collector, as its load (loading.load) and its levers' child
    # (loading.forked) did already: the report's imports make ~300k objects and its analyses few cycles, and the
    # collector's passes over them were 0.025-0.028 s of CPU on the 293 MB benchmark trace, most of it while the
    # modules import beside the read-ahead's gunzip and scan, two threads that want both cores (peak memory 470-474 MB
    # with it or without). A report of a directory keeps it: each rank's analysis leaves its objects behind.
    gc_was_on = gc.isenabled()
    if one_file:
        gc.disable()
    # (once the read-ahead runs: the kept methods' code is read on the first dataclass made after, ~0.03 s)
    dataclass_code.install()
    _numpy_without_blas_threads(sys.argv[1:] if argv is None else argv)
    try:
        return _parse_and_run(argv)
    finally:   # (a command that ended before its read, a bad option, a --help: no thread left reading, no text held)
        read = sys.modules.get("tracetriage.analyzers.loading.read")
        if read is not None:
            read.forget_read_ahead()
        if gc_was_on:
            gc.enable()


def _parse_and_run(argv: list[str] | None) -> int:
    ap = build_parser()
    a = ap.parse_args(argv)
    if a.cmd is None:   # `tracetriage` alone: what it can do, as `git` and `pip` answer
        ap.print_help()
        return 0
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
        return EXIT_INTERNAL


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


if __name__ == "__main__":
    sys.exit(main())
