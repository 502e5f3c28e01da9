"""One analysis per bundled trace in each test process: the sweeps over traces/ (claims, invariants, health, the
labels, the levers' reports...) each called analyze_file on the same ~70 traces, a file after another.

Only what cannot differ between two calls is kept: a trace under the repository's traces/ folder (never written by
a test), keyed by its path as given and resolved, its mtime, the call's arguments and where sources are looked for
(the working directory, `try`'s script folder); a call with a graph capture beside it, or made by a test that
patches anything (it asks for `monkeypatch`: an environment variable, a constant, a peak table), is analysed
afresh, as is every trace a test writes. The Analysis is frozen, so a test cannot change what the next one reads."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

_BIG = 8 << 20       # bytes of a trace file above which its analysis is not kept (its events would stay in memory)
_patched = [False]   # the running test asked for monkeypatch


def install(traces: Path) -> None:
    """Wrap tracetriage.analyzers.triage.report.analyze_file before any test module imports it by name."""
    from tracetriage.analyzers.loading import source_files
    from tracetriage.analyzers.triage import report

    original, kept = report.analyze_file, {}

    def analyze_file(path, range_name=None, graph_capture=None, peer_transfer_ns=None):
        try:
            p = Path(path).resolve()
            st = p.stat()
        except (OSError, RuntimeError):   # missing, a loop of links...: the product's own error, not ours
            return original(path, range_name, graph_capture, peer_transfer_ns)
        if _patched[0] or graph_capture is not None or not p.is_relative_to(traces) or st.st_size > _BIG:
            return original(path, range_name, graph_capture, peer_transfer_ns)
        # (the path as given too: the Analysis says it back, and a relative path stays relative in the report; and
        # where the sources are looked for: the working directory and `try`'s script folder, source_files.also_under)
        key = (str(path), str(p), st.st_mtime_ns, range_name, peer_transfer_ns, os.getcwd(),
               source_files._ALSO_UNDER.get())
        if key not in kept:
            kept[key] = original(path, range_name, graph_capture, peer_transfer_ns)
        return kept[key]

    analyze_file.__doc__ = original.__doc__
    report.analyze_file = analyze_file


@pytest.fixture(autouse=True)
def _afresh_where_patched(request):
    _patched[0] = "monkeypatch" in request.fixturenames
    yield
    _patched[0] = False
