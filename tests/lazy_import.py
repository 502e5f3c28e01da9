"""Heavy packages a test file needs, imported when a test first uses them, not when pytest collects the file.

Each pytest-xdist worker collects every test file, so a package that a file imports at module level is imported by
every worker (Streamlit with pandas, pyarrow and plotly ~1.5 CPU-s; distributed ~0.8 s; playwright ~0.3 s), though
only the worker that runs the file's tests uses it, and a file of slow tests is imported by a fast run that runs none
of them. `Lazy("name")` stands for the module and imports it at the first attribute asked of it;
`skip_unless_installed` is pytest.importorskip's module-level skip, told from the installed packages (where Python
finds them) without importing them.
"""
from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

import pytest


def skip_unless_installed(*names: str) -> None:
    for name in names:
        if importlib.util.find_spec(name) is None:
            pytest.skip(f"could not import {name!r}: it is not installed", allow_module_level=True)


class Lazy:
    """A module, imported at the first public attribute asked of it (sys.modules keeps it: the later ones cost a
    lookup)."""

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def module(self) -> ModuleType:
        return importlib.import_module(self._name)

    def __getattr__(self, attr: str):
        if attr.startswith("_"):      # pytest's collection asks each module-level object for __test__ and the like
            raise AttributeError(attr)
        return getattr(self.module, attr)
