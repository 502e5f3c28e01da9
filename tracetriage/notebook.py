"""The typed results as a notebook shows them: an Analysis displays its five lines and the idle-by-cause
bar, a Diff its lines, a WhatIf its table, as pandas and Altair objects display themselves.

`shown(x)` gives back the same result as an instance of a subclass that adds IPython's display
hooks (`_repr_html_`, `_repr_markdown_`, a short `__repr__`) and nothing else: every field and
property is the analysis' own, and isinstance(x, tracetriage.analyzers.triage.report.Analysis) holds.
"""
from __future__ import annotations

import dataclasses
from typing import overload

from tracetriage.analyzers.triage import diff as diff_mod
from tracetriage.analyzers.triage import report
from tracetriage.analyzers.voice import notebook as words
from tracetriage.analyzers.whatif import predict


class Analysis(report.Analysis):
    def __repr__(self) -> str:
        return words.analysis_text(self)

    def _repr_markdown_(self) -> str:
        return words.analysis_markdown(self)

    def _repr_html_(self) -> str:
        return words.analysis_html(self)


class Diff(diff_mod.Diff):
    def __repr__(self) -> str:
        return words.diff_text(self)

    def _repr_html_(self) -> str:
        return words.lines_html(words.diff_lines(self))


class WhatIf(predict.WhatIf):
    def __repr__(self) -> str:
        return words.whatif_text(self)

    def _repr_html_(self) -> str:
        return words.whatif_html(self)


_SHOWN: dict[type, type] = {report.Analysis: Analysis, diff_mod.Diff: Diff, predict.WhatIf: WhatIf}


@overload
def shown(x: report.Analysis) -> Analysis: ...
@overload
def shown(x: diff_mod.Diff) -> Diff: ...
@overload
def shown(x: predict.WhatIf) -> WhatIf: ...
def shown(x):
    """The same result, as the subclass that displays itself (fields shared, not copied)."""
    cls = _SHOWN[type(x)]
    out: Analysis | Diff | WhatIf = object.__new__(cls)
    for f in dataclasses.fields(x):
        object.__setattr__(out, f.name, getattr(x, f.name))
    return out
