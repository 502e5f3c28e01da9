"""Does the fast suite reach every module? A check cheap enough to run on every full fast run.

Each pytest process of the run (xdist's workers too) reports the installed modules it imported; conftest.py
adds them up at the end and names any source module that none of them imported. An import is the cheapest
sign that a test reached the module (Python 3.11 has no cheap way to see which functions ran); a module
only a subprocess imports (a CLI run, the Streamlit server) counts once the test process imports it too.
"""
from __future__ import annotations

import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def source_modules() -> set[str]:
    """Every module the package installs, by its installed name (pyproject's package-dir)."""
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    out = set()
    for name, folder in setup["package-dir"].items():
        for p in (ROOT / folder).rglob("*.py"):
            rel = p.relative_to(ROOT / folder).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            if parts[-1:] != ("__main__",):      # `python -m` runs it; nothing imports it
                out.add(".".join([name, *parts]))
    return out


def imported() -> set[str]:
    return {m for m in sys.modules if m == "tracetriage" or m.startswith("tracetriage.")}


def is_whole_fast_run(config) -> bool:
    """The README's command: every test file, the default marker selection, nothing narrowed."""
    from _pytest.config import Config

    o = config.option
    return (config.args_source == Config.ArgsSource.TESTPATHS and o.markexpr == "not slow" and not o.keyword
            and not getattr(o, "deselect", None) and not getattr(o, "lf", False))


def unreached(seen: set[str]) -> list[str]:
    return sorted(source_modules() - seen)
