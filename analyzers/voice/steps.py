"""The words of steps and phases, said by the report's Measured and Regime lines and the dashboard:
how many steps and where they were found, the median / p90 / max step, the outlier and what made it,
the first step's set-up kept apart, and a trace's prefill against its decode (TTFT and per-token latency).
"""
from __future__ import annotations

from tracetriage.analyzers.model.units import a_or_an, count, duration_ns, duration_us, integer
from tracetriage.analyzers.voice.causes import CAUSE_SPECS
from tracetriage.analyzers.voice.common import CONSTRUCT_WORDS
from tracetriage.analyzers.voice.said import claim

MODEL_BUILD_NAMED = 0.1   # the model's build is said where it holds this share of the only step


def found_from(st) -> str:
    """'ProfilerStep ranges', 'the repeated op sequence, each ending in aten::item'."""
    how = st.found_from.value
    if how == "profiler_step":
        return "ProfilerStep ranges"
    what = "kernel" if how == "repeated_kernels" else "op"
    b = st.boundary.value if st.boundary is not None else "at_op"
    if b == "at_dataloader":
        return f"the repeated {what} sequence, each starting at a DataLoader fetch"
    if b in ("after_sync", "after_optimizer"):
        return f"the repeated {what} sequence, each ending in {st.anchor}"
    return f"the repeated {what} sequence, each starting at {st.anchor}"


def outlier(o, what: str = "step") -> str:
    """'step 7 took 3.1× the median: a 41.0 ms host stretch in aten::item'; a step the profiler named is said by
    its name in the trace ('ProfilerStep#4 took ...'), never by a 0-based index a user would look for in vain."""
    head = f"{o.name or f'{what} {o.step}'} took {o.ratio:.1f}× the median ({duration_ns(o.wall_ns)})"
    if o.why.value == "queued":
        own = _own_kernels(o)
        queued = claim("measured.outlier.queued_us", o.queued_busy_ns / 1e3,
                       f"{count(o.queued_kernels, 'kernel')} ({duration_ns(o.queued_busy_ns)})")
        before = (f" (the profiler ran {_profiler_steps(o)} unrecorded before it)" if o.unrecorded_before else "")
        wait = f", the host waiting {duration_ns(o.waited_ns)} in {o.waited_in}" if o.waited_in else ""
        return head + f": it first ran {queued} queued before the profiled window{before}{wait}; {own}"
    if o.why.value == "host":
        return head + ": its host took the time, not its kernels or an idle gap of the GPU"
    if o.cause is None:
        return head + claim("measured.outlier.kernels_longer", o.extra_ns / 1e3,
                            f": its kernels ran longer ({_own_kernels(o)}), not its gaps")
    where = CONSTRUCT_WORDS[o.construct] if o.construct is not None else o.host_op
    stretch = CAUSE_SPECS[o.cause].stretch
    return head + f": {a_or_an(duration_ns(o.gap_ns))} {stretch}" + (f" in {where}" if where else "")


def _own_kernels(o) -> str:
    """'its own 522 kernels ran 106.2 ms against the median step's 106.2 ms' (work queued before the window left
    out of both)."""
    ran = claim("measured.outlier.own_busy_us", o.own_busy_ns / 1e3, duration_ns(o.own_busy_ns))
    typical = claim("measured.outlier.median_own_busy_us", o.median_own_busy_ns / 1e3,
                    duration_ns(o.median_own_busy_ns))
    return f"its own {count(o.own_kernels, 'kernel')} ran {ran} against the median step's {typical}"


def _profiler_steps(o) -> str:
    """'ProfilerStep#0 to #2': the steps before the first recorded one."""
    last = o.unrecorded_before - 1
    return f"ProfilerStep#0 to #{last}" if last else "ProfilerStep#0"


def _cut_off(st) -> str:
    """'; ProfilerStep#4 (17.9 µs) left out: the profiler cut it off, it holds almost no GPU work': the ranges
    that are no step (analyses.profiler_steps)."""
    left = getattr(st, "cut_off", ())
    if not left:
        return ""
    said = ", ".join(f"{name} ({duration_ns(wall)})" for name, wall in left)
    return f"; {said} left out: cut off by the profiler, almost no GPU work"


def steps_clause(st, apart=()) -> str:
    """The Measured line's words for a trace's steps (no phases): '; 80 steps (...): 655 µs per step ...'; `apart`:
    the steps outside the loop's figures that outlast their max (analyses.steps_apart), said beside them."""
    if st is None:
        return ""
    if not st.found:
        passes = getattr(st, "passes", None)
        if st.why_none is not None and st.why_none.value == "one_pass" and passes is not None:
            # the same op sequence run whole K times, too few for a loop (analyses.passes): its passes, not one
            held = f", one under {passes.range_name}" if passes.range_name else ""
            return (f"; no repeated steps: {integer(passes.count)} passes of one op sequence{held}, too few to "
                    "read as steps")
        if st.why_none is not None and st.why_none.value == "one_pass" and getattr(st, "per_element", False):
            # a loop over single elements, not the model's layers (analyses.element_loops; heldout-user19
            # gp_d2h_sync: 12,286 per-element iterations of `.cpu()` and `+=` were 'layers of it')
            return (f"; no repeated steps: one pass, whose {count(st.repeats, 'repeat')} of one op sequence (from "
                    f"{st.repeat_op}) each work on one-element tensors: a loop over single elements, one per "
                    "iteration, not layers of a model")
        if st.why_none is not None and st.why_none.value == "one_pass" and getattr(st, "tiles", False):
            # one product cut into tiles of its reduction dimension (analyses.tile_loops; CS521-mp2's im2col
            # convolution, `out += cols[..., k0:k1] @ w[:, k0:k1].T`, was 'layers of it')
            return (f"; no repeated steps: one pass, whose {count(st.repeats, 'repeat')} of one op sequence (from "
                    f"{st.repeat_op}) each multiply slices and add the product into one output in place: a loop "
                    "over tiles of one matrix product, not layers of a model")
        if st.why_none is not None and st.why_none.value == "one_pass":
            return (f"; no repeated steps: one pass (its {count(st.repeats, 'repeat')} of one op sequence, from "
                    f"{st.repeat_op}, are layers of it, not steps)")
        if st.why_none is not None and st.why_none.value == "unmarked_loop":
            # a loop runs around the units, yet none of them holds a mark of a whole step: which unit is the step
            # is not known, so none is claimed (issue 33)
            return "; no steps found"
        return "; no repeated steps" if st.why_none is None or st.why_none.value != "no_ops" else ""
    s = st.summary
    n = len(st.steps)
    out = f"; {count(n, 'step')} ({found_from(st)}{_cut_off(st)})"
    if s is not None and n > 1 and s.steps == 1:
        out += f": {duration_ns(s.median_ns)} per steady step"   # one step left beside those kept apart
    elif s is not None and n > 1:
        out += (f": {duration_ns(s.median_ns)} per step (median; p90 {duration_ns(s.p90_ns)}, "
                f"max {duration_ns(s.max_ns)})")
    elif s is not None and n == 1 and getattr(st, "cut_off", ()):
        out += f": {duration_ns(s.median_ns)}"   # the one step the cut-off range would have halved
    build = getattr(st, "model_build_ns", 0)
    if n == 1 and build >= MODEL_BUILD_NAMED * st.steps[0].wall_ns > 0:
        # the only step holds the model's build: its wall is no loop's step (analyses.model_build)
        share = build / st.steps[0].wall_ns
        out += (f", {claim('measured.model_build_us', build / 1e3, duration_ns(build))} of it "
                f"({claim('measured.model_build_share', share, f'{100 * share:.0f}%')}) building the model and "
                "moving it to the device (torch.nn constructors, Module.to): one-time set-up, not the loop's cost")
    if s is not None and s.drained_ns:
        # work launched before the profiled window is no step's own: its drain is said apart, not in the figures
        out += (f", {s.drained_step}'s first {duration_ns(s.drained_ns)} left out: it drained work queued before "
                "the profiled window")
    setup = st.setup_steps
    if setup:
        said = [f"{x.name or f'step {x.index}'} ({duration_ns(x.wall_ns)})" for x in setup]
        out += f", {', '.join(said[:-1]) + ' and ' if len(said) > 1 else ''}{said[-1]} paying set-up, kept apart"
    if apart:
        out += _apart(apart, s.steps if s is not None else 0)
    if s is not None and s.outlier is not None:
        out += "; " + outlier(s.outlier)
    return out


def _apart(apart, loop: int) -> str:
    """', over the loop's 14; step 0 (46.4 ms, execute_new_2_cached_0, 31% busy) and step 1 (...) set apart: longer,
    and not the loop's repeated sequence'."""
    said = [f"step {x.index} ({duration_ns(x.wall_ns)}{', ' + x.range_name if x.range_name else ''}, GPU busy "
            f"{100 * x.busy_share:.0f}%)" for x in apart]
    listed = ", ".join(said[:-1]) + " and " + said[-1] if len(said) > 1 else said[0]
    return (f", over the loop's {integer(loop)}; {listed} set apart: longer than any of them, and not the loop's "
            "repeated sequence")


def phases_clause(p, span_us: float | None = None) -> str:
    """The Measured line's words for prefill against decode. A TTFT longer than the GPU span (`span_us`) counts
    host time before the first kernel: said, so the two figures of one sentence do not contradict each other."""
    ttft = f"prefill (TTFT) {claim('measured.ttft_us', p.ttft_us, duration_us(p.ttft_us))}"
    if span_us is not None and p.ttft_us > span_us:
        ttft += claim("measured.ttft_counts_host", 1,
                      " (from the request's first host call: host time before the first kernel counted)")
    if p.requests > 1:
        ttft += f" median over {count(p.requests, 'request')} (p90 {duration_us(p.ttft_p90_us)})"
    out = (f"; {ttft}, decode {duration_us(p.per_token_us)} per token over "
           f"{claim('measured.decode_steps', p.decode.count, count(p.decode.count, 'step'))} "
           f"(median {duration_us(p.per_token_median_us)}, p90 {duration_us(p.per_token_p90_us)})")
    if p.found_from.value == "shapes":
        seq = a_or_an(f"{integer(p.prompt_tokens)}-token prompt") if p.prompt_tokens else "a prompt"
        batch = f", batch {p.batch}" if p.batch else ""
        out += f", found from the ops' shapes ({seq}{batch}; no named ranges)"
        if p.decode_inferred:
            out += ("; decode steps record no shapes (compiled code or CUDA-graph replays): taken as decode, one "
                    "step per token after the prefill")
    if p.mixed_steps:
        out += f"; {count(p.mixed_steps, 'mixed step')} (prefill and decode tokens in one batch)"
    if p.decode_outlier is not None:
        out += "; " + outlier(p.decode_outlier, "decode step")
    return out


def phases_regime(p) -> str:
    return f"prefill is {p.prefill.regime}-bound, decode {p.decode.regime}-bound"
