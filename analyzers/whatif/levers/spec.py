"""What a what-if lever is: one spec, read by the replay, the report, the words, diff, capture and the drills.

A lever is a fix a user can make, stated as an edit of the trace's dependency graph. Its spec says,
in one place (one module per lever in this folder, assembled by analyzers.whatif.levers):

    name        the lever's name on the command line and in the JSON (`remove_syncs`)
    cause       the idle cause it acts on (None: it acts on the kernels, not on idle time)
    apply       how the fix changes the graph: edits a replay Plan, returns the typed Assumption
                (the figures it took as given, with their sources) and a detail dict
    says        its assumption in one line, for `whatif`, the JSON and the dashboard
    words       the lever as a noun phrase ("removing the syncs"), for "would waste the week"
    fix         the fix made in code, as the ground-truth workloads make it (capture/fixes.py)
    recognise   how `diff` tells that a change between two traces applied it: an amount measured
                on each trace (sync points, graph launches, kernel time ...) and when the change
                in that amount means the fix was made, with the words that say so
    quantity    the prediction-log quantity it measures (`<name>_ratio`)
    weighed_only_if_found   the report weighs it only where the trace has what it acts on (overlap_comm on a
                trace without collectives is no experiment, not even one that would waste the week)
    ranks       how many GPUs its fix needs to be measured (overlap_comm: 2, the other ranks to meet)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from analyzers.model.names import name_flags
from analyzers.model.trace import Trace
from analyzers.model.verdicts import Cause


class WhatIfError(ValueError):
    """The question cannot be asked of this trace; the message is one line for the user."""


# Where a lever's figure was measured: the `source` of an Assumption's figure.
SOURCE_WORDS = {"trace": "measured in this trace", "ceilings": "measured ceilings (tracetriage capture ceilings)",
                "datasheet": "datasheet PCIe x16 link", "guess": "assumed (no measurement, unknown device)",
                "reference": "measured on an H200 under torch.profiler (traces/gpt-graphs.json.gz)"}


@dataclass(frozen=True)
class Assumption:
    """What a lever's prediction takes as given. Each lever subclasses it with its own typed figures.

    count: what the lever acts on (the syncs, host stretches, pageable copies, kernels ...);
    0 means the trace has nothing for this fix to change.
    """
    lever: str
    count: int = 0


@dataclass(frozen=True)
class Options:
    """What a caller may set on a lever: `only` (the op whose syncs go) and `kernel_scale` (the
    share of its time each kernel keeps)."""
    only: str | None = None
    kernel_scale: float = 0.5


@dataclass
class Context:
    """The trace and its graph, as a lever's edit reads them."""
    trace: Trace
    g: object                   # analyzers.whatif.depgraph.Graph

    def calls_named(self, test) -> np.ndarray:
        return name_flags(self.trace, self.g.c_row, test)

    def gpu_named(self, test, rows=None) -> np.ndarray:
        return name_flags(self.trace, self.g.g_row if rows is None else self.g.g_row[rows], test)


@dataclass(frozen=True)
class Measured:
    """One trace as diff compares it: the trace, its what-if (analyzers.whatif.predict.WhatIf) and
    its kernel busy time."""
    trace: Trace
    whatif: object
    kernel_busy_ns: int


@dataclass(frozen=True)
class Recognise:
    """How diff tells that a change applied a lever: `amount` measured on the before and after
    traces, `applied(before, after)` true when the fix was made; `evidence` names what says so (a
    key of the JSON) and `because` says it. Levers are tried in `order`, lowest first."""
    order: int
    evidence: str
    because: str
    amount: Callable[[Measured], float]
    applied: Callable[[float, float], bool]
    # a lever whose replay can take the measured change itself (kernels as much faster as they
    # measured): Options for the before trace's replay, from the before and after amounts
    as_measured: Callable[[float, float], Options] | None = None
    given: str = ""                         # how that replay is said: " with kernels that much faster"


def went(before: float, after: float) -> bool:
    """The thing the lever removes was there and at least half of it is gone."""
    return before > 0 and after <= before // 2


@dataclass(frozen=True)
class LeverSpec:
    name: str
    cause: Cause | None
    apply: Callable[[Context, object, Options], tuple[Assumption, dict]]
    says: Callable[[Assumption], str]
    words: str
    fix: str
    recognise: Recognise
    applied_words: str = ""                 # "the change applied <this>" (default: the name)
    prediction_words: str = ""              # after the Next line's predicted saving ("if every kernel ...")
    takes_only: bool = False                # --only OP narrows it
    weighed_only_if_found: bool = False     # the report skips it where its assumption counts nothing to act on
    ranks: int = 1                          # GPUs its fix needs to be measured: the one-GPU fix workloads
                                            # (capture/fixes.py) measure the levers with 1
    meta: dict = field(default_factory=dict)

    @property
    def quantity(self) -> str:
        return f"{self.name}_ratio"

    @property
    def applied_as(self) -> str:
        return self.applied_words or self.name
