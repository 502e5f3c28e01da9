"""validate_args: torch.distributions' argument validation turned off (`Categorical(logits=..., validate_args=False)`,
or `torch.distributions.Distribution.set_default_validate_args(False)` once).

Outside `python -O`, every torch.distributions object checks its parameters when it is built and every sample it is
asked to score (log_prob): Distribution.__init__ and _validate_sample run the constraint's check on the device
(`value == value` for a real logit, `(value % 1 == 0) & (lower <= value) & (value <= upper)` for a category) and then
branch on it in Python, `if not torch._is_all_true(valid): raise ValueError(...)`. The branch reads the one truth
value to the host (aten::is_nonzero -> aten::item -> aten::_local_scalar_dense: a device-to-host copy and a stream
synchronize), so a rollout that builds a distribution per env step drains the GPU twice a step, and no CUDA graph
can capture a step that holds the reads (capture refuses a sync; torch.compile breaks the graph at each).

What any trace of the construct shows (found by `find`): on one thread, an outermost aten::is_nonzero (the Python
`if` on a tensor) right after (READ_WITHIN outermost ops) an outermost aten::_is_all_true, which the constraint's
check ops (CHECK_OPS: comparisons, their `&`, the integer test's remainder) precede; MIN_CHECKS times or more.
torch.distributions is the one Python caller that branches on torch._is_all_true with `if` (torch >= 2.1;
torch._check_tensor_all reads it with .item()). Not this construct: a comparison's `.all()` read in an if (aten::all,
then aten::is_nonzero): as often a decision as a check (Hugging Face's `if (attention_mask == 1).all()` picks the
attention path: traces/fixes/knobs4 checkpoint_gpt2_train reads it 3 times a step), so older torch's
`valid.all()` in Distribution is not told apart from it and is left out; a NaN/Inf guard (aten::isnan/isinf/
isfinite reduced and read: value_checks' construct, left to it); `.item()` of a loss (remove_syncs). What would make
it fire falsely: a program that calls torch._is_all_true itself and branches on it (a private function: rare).

The price: the replay takes the checks out (their ops' kernels and dispatch, and their reads no longer block);
what CUDA graphs would buy once the reads are gone is the cuda_graphs lever's, said as the next step, not added.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import thread_keys
from tracetriage.analyzers.model.verdicts import Cause, Experiment
from tracetriage.analyzers.whatif.levers import drop_ops
from tracetriage.analyzers.whatif.levers.knob import mirror_queued, outermost_ops
from tracetriage.analyzers.whatif.levers.spec import (
    Assumption,
    Context,
    Knob,
    LeverSpec,
    Measured,
    Options,
    Recognise,
    replay_figure,
    went,
)
from tracetriage.analyzers.whatif.levers.value_checks import PREDICATES

READ = "aten::is_nonzero"
DISTRIBUTION_REDUCE = "aten::_is_all_true"       # torch >= 2.1: Distribution.__init__ and _validate_sample
REDUCES = frozenset((DISTRIBUTION_REDUCE,))
# a comparison's .all() inside the check (a constraint over the last dimension: independent(real, 1)), not its read
INNER_REDUCES = frozenset(("aten::all",))
COMPARES = frozenset(("aten::eq", "aten::ne", "aten::ge", "aten::gt", "aten::le", "aten::lt"))
# the constraint's check ops: comparisons, their `&`, the integer test's `value % 1`, and the views between them
CHECK_OPS = COMPARES | INNER_REDUCES | frozenset((
    "aten::bitwise_and", "aten::__and__", "aten::logical_and", "aten::remainder", "aten::fmod",
    "aten::reshape", "aten::view", "aten::as_strided", "aten::expand", "aten::unsqueeze"))
READ_WITHIN = 2        # outermost ops between the reduction and the read (a view at most)
MAX_CHECK_OPS = 10     # outermost ops a check holds before its reduction (integer_interval: 6)
MIN_CHECKS = 2         # one check is a guard; two or more a step are a distribution built and scored per step


@dataclass(frozen=True)
class Validation:
    """One argument check: its first check op to the read's end, on one thread."""
    thread: int
    start: int
    end: int


def find(c: Context) -> list[Validation]:
    """The argument checks read on the host (the module docstring's rule); none where fewer than MIN_CHECKS."""
    ev, names = c.trace.ev, c.trace.names
    ops = outermost_ops(c)
    read_ids = [i for i, n in enumerate(names) if n == READ]
    if not len(ops) or not read_ids:
        return []
    key = thread_keys(ev, ops)
    out = []
    for k in distinct(key).tolist():
        mine = ops[key == k]
        ids = ev.name[mine]
        for i in np.flatnonzero(np.isin(ids, read_ids)).tolist():
            before = [names[int(n)] for n in ids[max(i - READ_WITHIN - MAX_CHECK_OPS, 0):i].tolist()][::-1]
            red = next((j for j, b in enumerate(before[:READ_WITHIN]) if b in REDUCES), None)
            if red is None:
                continue
            j = red + 1
            while j < len(before) and j - red <= MAX_CHECK_OPS and before[j] in CHECK_OPS:
                j += 1
            body = before[red + 1:j]
            if not COMPARES & set(body) or PREDICATES & set(before[red + 1:red + 1 + MAX_CHECK_OPS]):
                continue   # no comparison checked (a flag tensor's .all()), or a NaN guard (value_checks')
            first = int(mine[i - j])
            out.append(Validation(int(k), int(ev.start[first]), int(ev.end[mine[i]])))
    return out if len(out) >= MIN_CHECKS else []


@dataclass(frozen=True)
class ValidationOff(Assumption):
    per_step: int = 0          # checks a profiled step
    waited_ns: int = 0         # the checks' reads' wait, as traced
    gpu_ns: int = 0            # the checks' kernels and copies
    launches: int = 0


def apply(c: Context, p, o: Options) -> tuple[ValidationOff, dict]:
    checks = find(c)
    if not checks or not c.g.n_calls:
        return ValidationOff("validate_args", 0), {"checks": 0}
    waited, gpu_ns, launches = drop_ops.drop(c, p, [(ch.thread, ch.start, ch.end) for ch in checks])
    queued = mirror_queued(c, p)     # the window's first step, queued before it: its checks' kernels go too
    return (ValidationOff("validate_args", len(checks), per_step=len(checks) // drop_ops.profiled_steps(c),
                          waited_ns=waited, gpu_ns=gpu_ns, launches=launches),
            {"checks": len(checks), "queued_kernels": queued})


def says(a: ValidationOff) -> str:
    if a.count == 0:
        return ("no argument check of torch.distributions read on the host (a comparison reduced by "
                "aten::_is_all_true, then read by aten::is_nonzero) twice or more")
    steps = f" ({units.integer(a.per_step)} a step)" if a.count > a.per_step else ""
    return (f"{units.integer(a.count)} checks{steps} of torch.distributions' argument "
            "validation (a comparison reduced by aten::_is_all_true, then read by aten::is_nonzero) each drain the GPU "
            f"for a blocking read; priced as the checks' ops gone: {units.integer(a.launches)} GPU activities "
            f"({units.duration_ns(a.gpu_ns)}), their dispatch, and {units.duration_ns(a.waited_ns)} the host waited "
            "in their reads; CUDA graphs, possible once the reads are gone, not added")


def _sync_idle(m: Measured) -> float:
    return float(m.by_cause_ns.get(Cause.SYNCHRONIZATION, 0) + m.by_cause_ns.get(Cause.LAUNCH_OVERHEAD, 0))


def blocks_graphs(assumption: Assumption | None) -> bool:
    """A check read per step splits the step: no CUDA graph captures it until validation is off."""
    return isinstance(assumption, ValidationOff) and assumption.per_step >= MIN_CHECKS


CHANGE = ("switch argument validation off: torch.distributions.Distribution.set_default_validate_args(False) once, or "
          "validate_args=False where the distribution is built (each check reads a truth value to the host)")

SPEC = LeverSpec(
    name="validate_args", effort=1, cause=None, apply=apply, says=says, words="argument validation off",
    fix="torch.distributions' argument validation off (validate_args=False)",
    recognise=Recognise(order=1, evidence="checks", because="its argument checks stopped reading to the host",
                        amount=replay_figure("validate_args", "checks"), acted=_sync_idle, applied=went),
    applied_words="argument validation off (validate_args)", weighed_only_if_found=True,
    experiment=Experiment.TURN_KNOB,
    knob=Knob(change=CHANGE,
              evidence="an outermost aten::is_nonzero right after aten::_is_all_true of comparisons "
                       "(aten::eq/ge/le ..., their bitwise_and), twice or more",
              applies="every device and dtype",
              model="the checks' kernels, dispatch and blocking reads removed in the replay; CUDA graphs after them "
                    "not added",
              guide="torch.distributions (Distribution.set_default_validate_args); past the tuning guides",
              ops=(READ,)))
