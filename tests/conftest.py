"""Test-session setup shared by every test file.

Triton decides at kernel-definition time whether to interpret, so on a machine
without CUDA the switch must be set before anything imports `kernels`.

A test session leaves nothing behind: everything it writes outside the repository's tracked files
goes under one folder in the system's temp directory (tracetriage-tests-*), removed when the session
ends. The folder holds the session's analysis cache, drill log and Hypothesis database, and is the
temp directory itself (TMPDIR) for the session and every process it starts: pytest's tmp_path
folders, Dask's scratch space, Streamlit's uploads, the browser's profile, Inductor's cache. Pass
`--basetemp DIR` to keep the tests' tmp_path folders for a look after the run.

Slow tests (marked `slow`: real browsers, Dask clusters, captures, sweeps over every trace) are left
out of a plain `pytest -q`; `pytest -q -m slow` runs them, as .ci/run's second step does (in two parts).
"""
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SESSION_VAR = "TRACETRIAGE_TEST_SESSION_DIR"

# The first process of the session makes the folder and owns it; pytest-xdist's workers and every
# subprocess a test starts inherit it through the environment and leave its removal to that process.
_OWNS_SESSION_DIR = not os.environ.get(SESSION_VAR)
# Bytecode: a session starts dozens of Python processes (xdist's workers, and each CLI, server and child a test
# runs), and where PYTHONDONTWRITEBYTECODE is set each one compiles every module of the repository it imports from
# source again, and pytest rewrites every test module again in each worker: 19.7 CPU-s for a worker's collection
# against 12.9 s with the bytecode kept, and ~0.3 s more for each CLI process. The session keeps it (in the
# __pycache__ folders, which git ignores), for its own processes and every process they start.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    sys.dont_write_bytecode = False
PREFIX = "tracetriage-tests-"       # then the owner's pid: tracetriage-tests-PID-XXXXXXXX


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:           # (another user's process: alive)
        pass
    return True


def _remove_orphaned_session_dirs(temp: str) -> None:
    """Session folders whose owner is gone: a run killed before its end could remove its own, or one that a late
    writer (a forked cache write, a server still stopping) made again after the owner removed it. The owner's pid
    is in the name, so a folder of a run still going (another checkout's, beside this one) is left alone."""
    for d in Path(temp).glob(PREFIX + "*"):
        pid = d.name[len(PREFIX):].split("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)


if _OWNS_SESSION_DIR:
    _remove_orphaned_session_dirs(tempfile.gettempdir())
    os.environ[SESSION_VAR] = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-")
SESSION_DIR = Path(os.environ[SESSION_VAR])
_TMP = SESSION_DIR / "tmp"
_TMP.mkdir(exist_ok=True)
os.environ["TMPDIR"] = str(_TMP)
tempfile.tempdir = str(_TMP)      # gettempdir() caches its answer: reset it for this process too

# A cache and a drill log of the session's own: results never depend on what a developer's earlier runs
# left in ~/.cache/tracetriage, and no test writes to the developer's own log. The cache is shared (it is safe
# across processes); the log is each process's (each xdist worker its own): a test may count what it wrote there.
os.environ.setdefault("TRACETRIAGE_CACHE_DIR", str(SESSION_DIR / "cache"))
if os.environ.get("TRACETRIAGE_DB", str(SESSION_DIR)).startswith(str(SESSION_DIR)):
    os.environ["TRACETRIAGE_DB"] = str(SESSION_DIR / f"log-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.sqlite3")
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(SESSION_DIR / "hypothesis"))   # not .hypothesis/ in the repo
from hypothesis import HealthCheck, settings  # noqa: E402

# A 2-core machine running other work draws examples slowly: that time is the machine's, not the strategy's
# (test_shares_add_up failed Hypothesis's too_slow check at load 10), and a per-example deadline measures it too.
settings.register_profile("tracetriage", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("tracetriage")
sys.path.insert(0, str(ROOT / "tests"))  # helper modules such as fixtures_gpu_trace

import bundled_analyses  # noqa: E402
import cache_writes  # noqa: E402
import collected_objects  # noqa: E402
import freed_memory  # noqa: E402
import module_coverage  # noqa: E402

# freed arrays kept for the next ones in this process, not faulted in page by page again (tests/freed_memory.py)
freed_memory.keep_freed_memory()

if os.environ.get("PYTEST_XDIST_WORKER"):
    # a worker per core: one intra-op thread each (more would oversubscribe the cores with spinning threads)
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def _has_cuda() -> bool:
    """Whether torch sees a CUDA (or ROCm) device. Without a GPU driver's device node it cannot, and that is told
    without importing torch (~2 CPU-s, paid by pytest's process and each xdist worker before its first test,
    where most workers' tests never use torch); only a machine with such a node asks torch."""
    if not any(next(Path("/dev").glob(pattern), None) for pattern in ("nvidia[0-9]*", "dxg", "kfd")):
        return False
    try:
        import torch
    except ImportError:  # pragma: no cover
        return False
    return torch.cuda.is_available()


if not _has_cuda():
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pyproject's addopts) spreads a whole run over the cores; a run of named files or tests stays in one
    process, where workers would each import everything for a file or two."""
    from _pytest.config import Config

    return None if config.args_source == Config.ArgsSource.TESTPATHS else 0


# --- the fast suite reaches every module (tests/module_coverage.py) ---------------------------------------
module_coverage.install(SESSION_DIR)
# --- one analysis per bundled trace in each process (tests/bundled_analyses.py) ------------------------------
_afresh_where_patched = bundled_analyses._afresh_where_patched


def pytest_configure(config):
    """In each process that runs tests (before it imports a test module), not in pytest-xdist's controller, which
    runs none: there the analysers' import (~0.5 CPU-s) came before any worker started."""
    if os.environ.get("PYTEST_XDIST_WORKER") or not getattr(config.option, "numprocesses", None):
        bundled_analyses.install(ROOT / "traces")
        cache_writes.write_in_this_process()        # no fork of this process for each trace loaded afresh


def pytest_collection_finish(session):
    if os.environ.get("PYTEST_XDIST_WORKER") or not getattr(session.config.option, "numprocesses", None):
        collected_objects.freeze_what_collection_made()   # out of each full collection's walk (collected_objects.py)


_unreached: list[str] = []


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    if not _OWNS_SESSION_DIR or not module_coverage.is_whole_fast_run(session.config):
        return
    _unreached[:] = module_coverage.unreached(SESSION_DIR)     # (xdist's workers have finished by now)
    if _unreached and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    if _unreached:
        terminalreporter.write_line(f"error: no fast test runs {', '.join(_unreached)}: give each a fast test "
                                    "(tests/module_coverage.py)", red=True, bold=True)


LATE_WRITERS_S = 60      # how long the session's end waits for processes of the session still running


def _session_processes() -> list[int]:
    """Processes other than this one started in this session (each inherits SESSION_VAR): xdist's workers on
    their way out, the forked children that write the analysis cache in the background after a report returned
    (analyzers/loading/cache.py: put_in_background), a server still stopping."""
    mark = f"{SESSION_VAR}={SESSION_DIR}".encode() + b"\0"
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if mark in (proc / "environ").read_bytes() and (proc / "stat").read_text().split(") ")[-1][0] != "Z":
                found.append(int(proc.name))
        except OSError:
            pass
    return found


def _remove_session_dir() -> None:
    """Once the session's other processes have ended (a late writer would make the folder again after it was
    removed), at most LATE_WRITERS_S; a folder made again after that goes at the next session's start."""
    import time

    deadline = time.monotonic() + LATE_WRITERS_S
    while sys.platform.startswith("linux") and _session_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    shutil.rmtree(SESSION_DIR, ignore_errors=True)


def pytest_unconfigure(config):
    if not _OWNS_SESSION_DIR:
        return
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is None:
        _remove_session_dir()
        return
    # multiprocessing keeps a pymp-* folder in the temp dir (the session's) and removes it at exit, in a finalizer
    # of priority -100: removing the session dir now made that removal fail at exit, with a traceback. So the
    # session dir goes in a finalizer of its own that runs after it.
    mp_util.Finalize(None, _remove_session_dir, exitpriority=-101)


# --- the sweeps over the bundled traces on one worker, and the drills shown on their traces on one ----------
# These files each analyse every trace of the fast share (tests/test_invariants.py: FAST_SHARE); one process
# keeps one analysis per trace (tests/bundled_analyses.py), so on one worker each trace is analysed once, where
# two workers each analysed them all again (probe-transfer-many-small alone ~2 CPU-s a worker).
# Each worker is handed the costliest unit left (tests/scope_costs.py), not the next in file order: the files of
# seconds go first and the short ones even the two workers out at the end, where a long file handed out last kept one
# core busy alone.
TRACE_SWEEPS = frozenset({"test_claims.py", "test_invariants.py", "test_health.py", "test_golden.py"})
# Two files that each grade or show the drill on gpt-eager's ranges (M02.02-a): its shown copy (gpt-eager rewritten
# without its range names) and the facts read from it cost ~5.5 CPU-s the first time in a process, and on two workers
# each paid it (a whole fast run's per-test getrusage: 6.2 CPU-s in the one's first M02.02-a test, 5.4 in the other's).
DRILL_SHOWS = frozenset({"test_grader_reading.py", "test_drill_show_gives_inputs.py"})
# The files that run dashboard pages under Streamlit's AppTest: Streamlit, with plotly, pandas and pyarrow, is imported
# by their first page run (not at collection: tests/lazy_import.py), ~1.5 CPU-s, paid by one worker where the files
# spread over two paid it in each.
DASHBOARD_PAGES = frozenset({"test_dashboard_app.py", "test_dashboard_findings.py", "test_dashboard_try.py"})
UNITS = {**dict.fromkeys(TRACE_SWEEPS, "the sweeps over the bundled traces"),
         **dict.fromkeys(DRILL_SHOWS, "the drills shown and graded on their traces"),
         **dict.fromkeys(DASHBOARD_PAGES, "the dashboard's pages run under AppTest")}


def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    import scope_costs

    class SharedWorkOnOneWorkerLongestFirst(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = super()._split_scope(nodeid)
            return UNITS.get(Path(file).name, file)

        def _cost(self, unit: str) -> float:
            files = sorted(f for f, u in UNITS.items() if u == unit) or [Path(unit).name]
            return scope_costs.cost(files, len(self.workqueue[unit]))

        def _assign_work_unit(self, node) -> None:
            # (the base class hands out the workqueue's first unit)
            self.workqueue.move_to_end(max(self.workqueue, key=self._cost), last=False)
            super()._assign_work_unit(node)

    return SharedWorkOnOneWorkerLongestFirst(config, log)
