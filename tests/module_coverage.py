"""Does the fast suite reach every module? A check cheap enough to run on every full fast run.

Every Python process of the test session (pytest, xdist's workers, and each subprocess a test starts, through
a sitecustomize on PYTHONPATH) notes the source files whose code it executed: Python's audit hook sees each
module body and each script run, however it starts (an import, `python -m`, runpy, Streamlit running a page
file). conftest.py adds them up at the end of a whole fast run and names the modules that none of them ran.
That a module's body ran is the cheapest sign that a test reached it (Python 3.11 has no cheap way to see
which functions ran); it is enough to say that no module is left to the slow step alone.
"""
from __future__ import annotations

import os
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent

# Installed once per process (a flag on sys): appends each new file under the repository to reached/PID.txt.
HOOK = r'''
import os as _os, sys as _sys
if not getattr(_sys, "_tracetriage_reached", None):
    def _reached(event, args, _seen=set(), _root=%(root)r,
                 _out=_os.path.join(%(dir)r, "reached", "%%d.txt" %% _os.getpid())):
        if event == "exec" and args:
            f = getattr(args[0], "co_filename", "")
            if f and f not in _seen and not f.startswith("<"):
                _seen.add(f)
                f = _os.path.abspath(f)
                if f.startswith(_root):
                    try:
                        with open(_out, "a") as fh:
                            fh.write(f + "\n")
                    except OSError:
                        pass
    _sys._tracetriage_reached = True
    _sys.addaudithook(_reached)
'''


def install(session_dir: Path) -> None:
    """Note what this process runs, and have every Python subprocess started from here do the same."""
    (session_dir / "reached").mkdir(exist_ok=True)
    site = session_dir / "site"
    site.mkdir(exist_ok=True)
    source = HOOK % {"root": str(ROOT) + os.sep, "dir": str(session_dir)}
    if not (site / "sitecustomize.py").exists():          # (the session's first process writes it)
        (site / "sitecustomize.py").write_text(source + _CHAIN)
    paths = [str(site), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    exec(compile(source, "<tracetriage reached hook>", "exec"), {})


# A sitecustomize further along sys.path (a distribution's own) still runs.
_CHAIN = r'''
import importlib.machinery as _m, importlib.util as _u
_here = _os.path.dirname(_os.path.abspath(__file__))
_spec = _m.PathFinder.find_spec("sitecustomize", [p for p in _sys.path if _os.path.abspath(p or ".") != _here])
if _spec is not None and _spec.loader is not None:
    _spec.loader.exec_module(_u.module_from_spec(_spec))
'''


def _folders() -> dict[Path, str]:
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return {ROOT / folder: name for name, folder in setup["package-dir"].items()}


def _module(path: Path, folders: dict[Path, str]) -> str | None:
    # (a prefix of the path's text, not `folder in path.parents`: a whole run reaches ~3,000 files, most under .venv,
    # and comparing Path objects along each one's parents took ~0.8 CPU-s at the run's end, while both cores idled)
    text = str(path)
    for folder, name in folders.items():
        if text.startswith(f"{folder}{os.sep}"):
            rel = path.relative_to(folder).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            return ".".join([name, *parts])
    return None


def source_modules() -> set[str]:
    """Every module the package installs, by its installed name (pyproject's package-dir)."""
    folders = _folders()
    return {m for folder in folders for p in folder.rglob("*.py") if (m := _module(p, folders))}


def reached(session_dir: Path) -> set[str]:
    folders = _folders()
    files = {line for f in (session_dir / "reached").glob("*.txt") for line in f.read_text().splitlines()}
    return {m for f in files if (m := _module(Path(f), folders))}


def is_whole_fast_run(config) -> bool:
    """The README's command: every test file, the default marker selection, nothing narrowed."""
    from _pytest.config import Config

    o = config.option
    return (config.args_source == Config.ArgsSource.TESTPATHS and o.markexpr == "not slow" and not o.keyword
            and not getattr(o, "deselect", None) and not getattr(o, "lf", False))


# Modules whose only tests are slow: each is a capture of tens of seconds on the CPU (tests/test_capture_scripts.py).
SLOW_ONLY = {"tracetriage.capture.distributed", "tracetriage.capture.stack_cost",
             "tracetriage.capture.examples.user_train"}


def unreached(session_dir: Path) -> list[str]:
    return sorted(source_modules() - reached(session_dir) - SLOW_ONLY)
