"""Import what the other pages need while the user reads the first one.

The first page paints before altair, pandas and the analysis are imported (tracetriage.dashboard.views loads a
page's module when the page first runs). Their import costs seconds on a busy machine (altair's
jsonschema alone about 1.5 s of CPU), which would otherwise land on the first click on Timeline. Once a
page has painted, one daemon thread per server process imports the other pages' modules, in sidebar
order; a page asked for meanwhile waits for its module only (Python's import lock is per module).
"""
from __future__ import annotations

import importlib
import threading

_started = threading.Event()


def start(modules) -> None:
    """Import `modules` (tracetriage.dashboard.views.<name>) on a background thread, once per process."""
    if _started.is_set():
        return
    _started.set()
    threading.Thread(target=_import_all, args=(tuple(modules),), name="tracetriage-warm", daemon=True).start()


def _import_all(modules) -> None:
    for name in ("tracetriage.dashboard.charts", "tracetriage.dashboard.data",
                 *(f"tracetriage.dashboard.views.{m}" for m in modules)):
        try:
            importlib.import_module(name)
        except Exception:      # a broken import shows on its page, with its own error; never here
            return
