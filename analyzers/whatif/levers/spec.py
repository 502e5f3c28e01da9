"""What a what-if lever is: one spec, read by the replay, the report, the words, diff, capture and the drills.

A lever is a fix a user can make, stated as an edit of the trace's dependency graph. Its spec says,
in one place (one module per lever in this folder, assembled by tracetriage.analyzers.whatif.levers):

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
    idle_floor  the share of the idle its cause must hold before the report calls for it (cuda_graphs: no
                "cut launches" for a sliver of launch overhead)
    headroom    it is the Amdahl check, not a fix: the report says it beside a fix, never as one (kernels_2x)
    knob        it is one line of the user's code from PyTorch's tuning guides: the line, the evidence, where it
                applies, its model and the guide (levers/knob.py; the catalogue of every guide's knob is
                levers/catalogue.py)
    most_saved  the most its edit can save: the time it takes out of the graph (a replay that only removes time
                saves no more than it), for the claim checker's bound on a Next that names it

Code outside this folder names a lever by its spec (the registry's constants, `spec.takes_only`,
`spec.experiment`, ...), never by a literal: tests/test_imports.py pins it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from tracetriage.analyzers.model.names import NameIndex
from tracetriage.analyzers.model.trace import KERNEL, Trace, thread_key, thread_keys
from tracetriage.analyzers.model.verdicts import Cause, Experiment

if TYPE_CHECKING:   # for the annotations only: the replay's graph and the analyses stay unimported here
    from tracetriage.analyzers.analyses.framework import Framework
    from tracetriage.analyzers.analyses.roofline import Roofline
    from tracetriage.analyzers.whatif.depgraph import Graph


class WhatIfError(ValueError):
    """The question cannot be asked of this trace; the message is one line for the user."""


# Where a lever's figure was measured: the `source` of an Assumption's figure.
SOURCE_WORDS = {"trace": "measured in this trace",
                "trace_other_way": "measured in this trace the other way: the link runs each direction at one rate",
                "ceilings": "measured ceilings (tracetriage capture ceilings)",
                "pcie5": "datasheet PCIe Gen5 x16 link", "pcie4": "datasheet PCIe Gen4 x16 link",
                "pcie3": "datasheet PCIe Gen3 x16 link",
                "c2c": "NVLink-C2C to the Grace CPU, 900 GB/s both ways: NVIDIA GH200 Grace Hopper Superchip datasheet",
                "sheet": "the device's datasheet",
                "guess": "assumed (no measurement, unknown device)",
                "reference": "measured on an H200 under torch.profiler (traces/gpt-graphs.json.gz)",
                "graph_reference": "the line through the graph launches of 20 committed H200 traces under "
                                   "torch.profiler, 10 to 13,062 kernels a graph",
                "trace_scaled": "the line through 20 H200 traces' graph launches, scaled to this trace's own, all of "
                                "one size",
                "devhost": "read on tracetriage's development host, a CPU machine without a GPU, not on a GPU host"}


# A lever's detail key, set True by a fix that takes host work away (done elsewhere, ahead of time): the profiler only
# adds host time, so such a fix saves no more without it than under it (whatif.predict bounds its unprofiled saving
# by the traced one).
MOVES_HOST = "moves_host"


@dataclass(frozen=True)
class Assumption:
    """What a lever's prediction takes as given. Each lever subclasses it with its own typed figures.

    count: what the lever acts on (the syncs, host stretches, pageable copies, kernels ...);
    0 means the trace has nothing for this fix to change.
    """
    lever: str
    count: int = 0

    @property
    def api_in_hand(self) -> bool:
        """The API the lever's change names exists for what the trace shows (an optimizer class's fused flag): True
        unless a lever's assumption knows better."""
        return True


@dataclass(frozen=True)
class Options:
    """What a caller may set on a lever: `only` (the op whose syncs go) and `kernel_scale` (the
    share of its time each kernel keeps)."""
    only: str | None = None
    kernel_scale: float = 0.5


@dataclass
class Context:
    """The trace and its graph, as a lever's edit reads them; what the analyses found of the trace
    (set-up windows, the roofline) when the caller has it, else found here when a lever first asks."""
    trace: Trace
    g: Graph
    setup: tuple | None = None  # one-time set-up on the host: (starts, ends, thread keys)
    roofline: Roofline | None = None   # roofline.analyze(trace), read only (the report found it before the fork)
    _windows: dict = field(default_factory=dict)

    @property
    def setup_windows(self) -> tuple:
        if self.setup is None:
            from tracetriage.analyzers.analyses import idle

            ups = [d.setup for d in idle.analyze(self.trace) if d.setup is not None and len(d.setup.start)]
            z = np.empty(0, np.int64)
            self.setup = (np.concatenate([u.start for u in ups]), np.concatenate([u.end for u in ups]),
                          np.concatenate([thread_key(u.pid, u.tid) for u in ups])) if ups else (z, z, z)
        return self.setup

    @property
    def call_keys(self) -> np.ndarray:
        """thread_key of each of the graph's host calls, found once for every lever that compares calls with other
        rows by thread (a dozen did it each, two passes over the event columns a time; callers only read it)."""
        if "call_keys" not in self._windows:
            ev = self.trace.ev
            self._windows["call_keys"] = thread_keys(ev, self.g.c_row)
        return self._windows["call_keys"]

    @property
    def setup_excess(self) -> tuple:
        """One-time set-up as host windows: the part of early calls their later calls do not pay."""
        if "setup_excess" not in self._windows:
            from tracetriage.analyzers.analyses.setup import setup_excess

            self._windows["setup_excess"] = setup_excess(self.trace)
        return self._windows["setup_excess"]

    @property
    def one_pass(self) -> bool:
        """The trace is one cold pass (tracetriage.analyzers.analyses.setup.one_pass: a search for its steps, asked
        by the set-up windows and by warm_up), found once."""
        if "one_pass" not in self._windows:
            from tracetriage.analyzers.analyses.setup import one_pass

            self._windows["one_pass"] = one_pass(self.trace)
        return self._windows["one_pass"]

    def construct_windows(self, construct) -> tuple:
        """Where a framework construct ran on the host: (starts, ends, thread keys, how many runs)."""
        if construct not in self._windows:
            from tracetriage.analyzers.analyses.framework import construct_windows

            self._windows[construct] = construct_windows(self.trace, construct)
        return self._windows[construct]

    @property
    def roof(self):
        """The trace's roofline (its peaks as the report judges the trace: DevicePeaks.judged_by), computed once."""
        if "roof" not in self._windows:
            from tracetriage.analyzers.analyses import roofline

            self._windows["roof"] = self.roofline if self.roofline is not None else roofline.analyze(self.trace)
        return self._windows["roof"]

    @property
    def kernel_bytes(self) -> np.ndarray | None:
        """Bytes the roofline charged to each kernel row (None: no op of the trace is costed)."""
        if "bytes" not in self._windows:
            kb = self.roof.kernel_bytes
            self._windows["bytes"] = kb if kb is not None and kb.sum() > 0 else None
        return self._windows["bytes"]

    @property
    def memory_rate(self) -> float | None:
        """Bytes per ns that this trace's memory-bound kernels reach (the median over those moving >= 1 MB),
        else None."""
        if "rate" not in self._windows:
            kb, ev = self.kernel_bytes, self.trace.ev
            rate = None
            if kb is not None:
                rows = self.g.g_row[self.g.g_cat == KERNEL]
                big = rows[kb[rows] >= (1 << 20)]
                dur = (ev.end[big] - ev.start[big]).astype(np.float64)
                ok = dur > 0
                rate = float(np.median(kb[big][ok] / dur[ok])) if ok.any() else None
            self._windows["rate"] = rate
        return self._windows["rate"]

    def once(self, key: str, make):
        """make()'s value, computed once per key for every lever of this replay (the callers do not modify it)."""
        if ("once", key) not in self._windows:
            self._windows["once", key] = make()
        return self._windows["once", key]

    def name_index(self, key: str, rows) -> NameIndex:
        """The names of the rows `rows()` gives, gathered once per key: every lever asks its own tests of the
        graph's calls, its GPU activities and the trace's cpu_ops (tracetriage.analyzers.model.names)."""
        if ("names", key) not in self._windows:
            self._windows["names", key] = NameIndex(self.trace, rows())
        return self._windows["names", key]

    def calls_named(self, test) -> np.ndarray:
        return self.name_index("calls", lambda: self.g.c_row).flags(test)

    def gpu_named(self, test, rows=None) -> np.ndarray:
        flags = self.name_index("gpu", lambda: self.g.g_row).flags(test)
        return flags if rows is None else flags[rows]


class LeverOutcome(Protocol):
    """What a lever's recogniser reads of its prediction (tracetriage.analyzers.whatif.predict.LeverPrediction)."""
    @property
    def assumption(self) -> Assumption: ...
    @property
    def detail(self) -> dict: ...


class Predicted(Protocol):
    """A trace's what-if as the recognisers read it: each lever's prediction by name. The what-if itself
    (tracetriage.analyzers.whatif.predict.WhatIf) imports this module, so it is named by what it does."""
    def lever(self, name: str) -> LeverOutcome: ...


@dataclass(frozen=True)
class Measured:
    """One trace as diff compares it: the trace, its what-if (tracetriage.analyzers.whatif.predict.WhatIf), its kernel
    busy time, its idle by cause and whose code made the idle (tracetriage.analyzers.analyses.framework)."""
    trace: Trace
    whatif: Predicted
    kernel_busy_ns: int
    by_cause_ns: dict = field(default_factory=dict)
    kernels: int = 0
    framework: Framework | None = None

    def idle_in(self, construct) -> int:
        x = self.framework.share_of(construct) if self.framework is not None else None
        return x.idle_ns if x is not None else 0


@dataclass(frozen=True)
class Recognise:
    """How diff tells that a change applied a lever: `amount` measured on the before and after
    traces, `applied(before, after)` true when the fix was made; `evidence` names what says so (a
    key of the JSON) and `because` says it. Of the levers a change applied, the one whose `acted` time
    (the ns it acts on: its cause's idle, its construct's, the kernel time) fell most is the change;
    `order` breaks a tie."""
    order: int
    evidence: str
    because: str
    amount: Callable[[Measured], float]
    applied: Callable[[float, float], bool]
    acted: Callable[[Measured], float] = lambda m: 0.0
    # more that must hold of the two traces (fusion: the kernels got fewer, not just their ops' names gone)
    also: Callable[[Measured, Measured], bool] = lambda before, after: True
    # a lever whose replay can take the measured change itself (kernels as much faster as they
    # measured): Options for the before trace's replay, from the before and after amounts
    as_measured: Callable[[float, float], Options] | None = None
    given: str = ""                         # how that replay is said: " with kernels that much faster"


def replay_figure(lever: str, key: str) -> Callable[[Measured], float]:
    """A Recognise amount: a figure the lever's own replay recorded on a trace (0 where it recorded none)."""
    return lambda m: m.whatif.lever(lever).detail.get(key, 0)


def replay_figure_grew(lever: str, key: str) -> Callable[[Measured, Measured], bool]:
    """A Recognise `also`: that figure is larger after than before (the kernels the knob brings appeared)."""
    return lambda before, after: replay_figure(lever, key)(after) > replay_figure(lever, key)(before)


def went(before: float, after: float) -> bool:
    """The thing the lever removes was there and at least half of it is gone."""
    return before > 0 and after <= before // 2


@dataclass(frozen=True)
class Knob:
    """A lever that is one line of the user's code, as PyTorch's tuning guides name it (levers/knob.py says
    more): the line, the trace's evidence, where it applies, how its saving is predicted, and the guide."""
    change: str
    evidence: str
    applies: str
    model: str
    guide: str
    needs: str = ""              # the precision the device must run fast ("tf32", "bf16"); "" for none
    line: Callable[[Assumption], str] | None = None   # the change as this trace needs it (default: `change`)
    where: Cause | None = None   # the idle cause whose frames are the line to change (None: the top hotspot's, the
                                 # GEMMs' and convolutions' own line)
    ops: tuple[str, ...] = ()    # the ops whose user frames are the line to change, before the top hotspot's (sdpa:
                                 # the hand-written softmax, wherever its time ranks)
    priced: bool = True          # False: the trace cannot show what it buys (cudnn_benchmark: the algorithms cuDNN
                                 # would try are not in it); the replay changes nothing and nothing says a saving

    def change_for(self, a: Assumption | None) -> str:
        return self.line(a) if self.line is not None and a is not None else self.change


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
    experiment: Experiment | None = None    # the Next it is (None: its idle cause's experiment)
    effort: int = 2                         # how big a change to the user's code the fix is: 1 a call or a flag,
                                            # 2 a function or a buffer, 3 a restructure; a close call goes to less
    weighed_only_if_found: bool = False     # the report skips it where its assumption counts nothing to act on
    ranks: int = 1                          # GPUs its fix needs to be measured: the one-GPU fix workloads
                                            # (capture/fixes.py) measure the levers with 1
    idle_floor: float = 0.0                 # the report calls for it only where its cause holds this share of
                                            # the idle
    headroom: bool = False                  # the Amdahl check of faster kernels: headroom, never the fix
    done_where_graphs_replay: bool = False  # a trace that replays CUDA graphs has made this change already
    knob: Knob | None = None                # a one-line change from PyTorch's tuning guides (levers/knob.py)
    in_hand: bool = False                   # a one-line change without a Knob (an optimizer's fused=True): said
                                            # beside a rewrite that saves more, as a knob is
    removes_work: bool = False              # its fix deletes work the program does not use (a backward nobody reads,
                                            # rows of a head thrown away, a stretch re-run on the same input): the
                                            # report names it before a lever that makes that work faster
    most_saved: Callable[[Assumption], int] | None = None   # the most its edit can save (ns): the host and GPU time it
                                            # takes out, which the claim checker holds the Next's saving to

    @property
    def one_line(self) -> bool:
        """A change of one line the report may say beside a rewrite: a knob, or a lever that says it is one."""
        return self.knob is not None or self.in_hand

    def one_line_for(self, a: Assumption | None) -> bool:
        """A change of one line for this trace: a knob, or an in-hand lever whose API the trace's own class has (no
        fused=True said of a Shampoo step: hta-sampled-rank0)."""
        return self.knob is not None or (self.in_hand and (a is None or a.api_in_hand))
    meta: dict = field(default_factory=dict)

    @property
    def quantity(self) -> str:
        return f"{self.name}_ratio"

    @property
    def applied_as(self) -> str:
        return self.applied_words or self.name
