"""The diff's words: the Diff, Time, Launches-and-bytes and Explained lines, how close the before
trace's prediction came, and the diff's caveats.
"""
from __future__ import annotations

from tracetriage.analyzers.model.span import PROFILER_STEP_RANGE
from tracetriage.analyzers.model.units import (
    a_or_an,
    duration_ns,
    duration_us,
    gbps,
    integer,
    ratio,
    share,
    signed_us,
    size,
    speed,
    times,
)
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.voice.common import CAUSE_WORDS, UNCOSTED_WORDS
from tracetriage.analyzers.whatif.levers import LEVERS


def _times(d, r: float) -> str:
    return ratio(r, d.about_same(r))


def diff_caveats(d) -> list[str]:
    out = []
    b, a = d.before, d.after
    if d.only_one_side_has_steps:
        has = b if b.steps else a
        out.append(f"only {has.name} has {PROFILER_STEP_RANGE} ranges ({integer(has.steps)}), so whole traces are "
                   "compared; profile the same number of steps for a fair comparison")
    if d.different_devices:
        out.append(f"the traces come from different devices ({b.device_name or 'unnamed'} vs "
                   f"{a.device_name or 'unnamed'}): the change mixes the hardware with the code")
    return out


def _idle_causes(d, k: int = 3) -> str:
    return ", ".join(f"{CAUSE_WORDS[c]} {signed_us(x)}" for c, x in d.idle_moved[:k])


def diff_lines(d) -> list[str]:
    """The diff's lines: Diff, Time, Launches and bytes, Explained (and its caveats)."""
    b, a = d.before, d.after
    cb, ca = d.compared_before, d.compared_after
    span_b, span_a = d.span_us
    busy_b, busy_a = cb.kernel_busy_us, ca.kernel_busy_us
    s = d.speedup
    dev = b.device_name if b.device_name == a.device_name else f"{b.device_name} / {a.device_name}"
    span = "step" if d.per_step else "span"
    change = "the after trace has no GPU activity" if s is None else a_or_an(speed(s))
    went = f"from {duration_us(span_b)} to {duration_us(span_a)}"
    # say what is compared: the mean of the steps, the queued work left out, with the whole spans beside them
    counts = f"{integer(cb.steps)}{'' if cb.steps == ca.steps else f' → {integer(ca.steps)}'}"
    queued = "; ".join(f"{duration_us(x.queued_us)} of kernels queued before {side} trace's window left out"
                       for x, side in ((cb, "the before"), (ca, "the after")) if x.queued_us > 0)
    l1 = (f"Diff: {b.name} → {a.name} on {dev}: the profiled step went {went} (the mean of {counts} "
          f"{'step' if cb.steps == ca.steps == 1 else 'steps'}{'; ' + queued if queued else ''}; the whole GPU "
          f"spans {duration_us(b.span_us)} → {duration_us(a.span_us)}), {change}." if d.per_step else
          f"Diff: {b.name} → {a.name} on {dev}: the GPU span went {went}, {change}.")

    idle_b, idle_a = cb.idle_us, ca.idle_us
    causes = _idle_causes(d)
    top_b = b.top_ops[0] if b.top_ops else None
    top_a = a.top_ops[0] if a.top_ops else None
    tops = ""
    if top_b and top_a:
        tops = (f"; the top op was {top_b.name} ({share(top_b.share)}) and is now "
                f"{top_a.name} ({share(top_a.share)})") if top_b.name != top_a.name else \
            f"; {top_a.name} stays the top op ({share(top_b.share)} → {share(top_a.share)})"
    l2 = (f"Time: the {span} changed by {signed_us(-d.time_saved_us)} = kernel busy {signed_us(busy_a - busy_b)} "
          f"({duration_us(busy_b)} → {duration_us(busy_a)}) + idle {signed_us(idle_a - idle_b)} "
          f"({share(cb.idle_share)} → {share(ca.idle_share)} of the {span}"
          + (f": {causes}" if causes else "") + f"){tops}.")

    lr, br = d.launch_ratio, d.byte_ratio
    per = " per step" if d.per_step else ""
    calls = f"{integer(cb.launch_calls)} → {integer(ca.launch_calls)} launch calls{per}"
    if lr is not None:
        calls += f" ({_times(d, lr)})"
    calls += f" for {integer(cb.kernels)} → {integer(ca.kernels)} kernels"
    if ca.graph_launches or cb.graph_launches:
        calls += (f", {integer(cb.graph_launches)} → {integer(ca.graph_launches)} of the calls "
                  f"CUDA-graph launches")
    if cb.span_per_launch_us and ca.span_per_launch_us:
        calls += (f", {duration_us(cb.span_per_launch_us)} → {duration_us(ca.span_per_launch_us)} of {span} per "
                  "launch call")
    if br is not None:
        src = [x.name for x in (b, a) if x.bytes_source == "sidecar"]
        note = (f"; {' and '.join(src)}: bytes declared by the capture sidecar, "
                "its kernels have no costed op in the trace") if src else ""
        byts = f"bytes{per} {size(cb.bytes)} → {size(ca.bytes)} ({_times(d, br)}{note})"
    else:
        short = list({x.name: x for x in (b, a) if x.bytes is None}.values())
        byts = "bytes not comparable: " + "; ".join(
            f"only {share(x.byte_coverage)} of {x.name}'s kernel time has a costed op ({uncosted_side(x)}) and "
            "no capture sidecar declares its bytes" for x in short)
    l3 = f"Launches and bytes: {calls}; {byts}; {b.regime}-bound → {a.regime}-bound."

    l4 = _explanation_line(d)
    lines = [l1, l2, l3, l4] + ([prediction_line(d.prediction)] if d.prediction else [])
    if diff_caveats(d):
        lines.append("Caveat: " + "; ".join(diff_caveats(d)) + ".")
    return lines

UNCOSTED_SIDE_WORDS = {**UNCOSTED_WORDS, "communication": "collectives carry no bytes of this device's work"}


def uncosted_side(x) -> str:
    """Why a diff side's kernel time has no bytes: the largest reasons with their shares."""
    tot = sum(x.uncosted_why_us.values()) or 1.0
    return "; ".join(f"{UNCOSTED_SIDE_WORDS[w]}: {share(us / tot)}" for w, us in list(x.uncosted_why_us.items())[:2]) \
        or "no op with a cost model launched its kernels"

def prediction_line(p) -> str:
    """How close the before trace's what-if came for the lever the change applied."""
    off = p.off
    verdict = ("as predicted" if p.as_predicted else
               f"{abs(off):.2f} better than predicted" if off < 0 else f"{off:.2f} short of the prediction")
    spec = LEVERS[p.lever]
    rec = spec.recognise
    # a lever replayed as measured (kernels as much faster as they were) says by how much
    how = f"{rec.because} {times(1 / p.kernel_scale)}" if rec.as_measured else rec.because
    if spec.knob is not None and not spec.knob.priced:      # no replay figure to hold it to: only what it measured
        return (f"Predicted: the change applied {spec.applied_as} ({how}); a trace cannot show what it buys, so "
                f"tracetriage whatif does not price it, and the after trace measures {p.measured_ratio:.2f} of the "
                f"traced span ({duration_ns(p.before_ns)} → {duration_ns(p.after_ns)}).")
    return (f"Predicted: the change applied {spec.applied_as} ({how}); from the before trace "
            f"alone{rec.given} tracetriage whatif predicted {p.predicted_ratio:.2f} of the traced span "
            f"({duration_ns(p.before_ns)} → "
            f"{duration_ns(p.predicted_ns)}), and the after trace measures {p.measured_ratio:.2f} "
            f"({duration_ns(p.after_ns)}): {verdict}.")


WAIT_EXPLAINS = 0.5   # collectives' waiting for a peer that moved this share of the busy change is said beside it


def _peer_wait_part(d, change_us: float) -> str:
    """', and the collective kernels' waiting for a peer grew by 12.9 ms: a peer arriving later, not more work' where
    the collectives' waiting
    for a peer moved with the busy time and holds WAIT_EXPLAINS of its change: a collective kernel spins until its
    peer arrives, so busy time that grows there is lateness, not work (heldout-user21 moeep rank 0: 'kernel busy time
    grew by 10.5 ms' as all_to_alls waited 13 ms longer for the other rank; regime overhead → communication)."""
    cb, ca = d.before.regime_detail.communication, d.after.regime_detail.communication
    wait_us = ((ca.wait_ns if ca else 0) - (cb.wait_ns if cb else 0)) / 1e3
    if not change_us or wait_us * change_us <= 0 or abs(wait_us) < WAIT_EXPLAINS * abs(change_us):
        return ""
    grew = "grew" if wait_us > 0 else "shrank"
    return (f", and the collective kernels' waiting for a peer {grew} by {duration_us(abs(wait_us))}: a peer "
            f"arriving {'later' if wait_us > 0 else 'sooner'}, not {'more' if wait_us > 0 else 'less'} work")


def _explanation_line(d) -> str:
    b, a = d.compared_before, d.compared_after
    regime_b, regime_a = d.before.regime, d.after.regime
    tb_ops, ta_ops = d.before.top_ops, d.after.top_ops
    span = "step" if d.per_step else "span"
    s, br, lr, how = d.speedup, d.byte_ratio, d.launch_ratio, d.explained_by
    saved = d.time_saved_us
    if how == "unchanged":
        return f"Explained: nothing to explain, the spans agree within {share(d.same_tol)} ({times(s)})."
    if how == "bytes":
        gap = 100 * d.bytes_gap
        moved = f"{share(1 / br)} of the bytes" if br >= 1 else f"{times(1 / br)} the bytes"
        busy = b.kernel_busy_us / max(a.kernel_busy_us, 1e-9)
        kt = (f"kernel time fell {times(busy)} against the bytes' {times(br)}" if br >= 1 else
              f"kernel time grew {times(1 / busy)} against the bytes' {times(1 / br)}")
        gb, ga = d.before.achieved_gbps, d.after.achieved_gbps
        rate = f" at {gbps(gb)} → {gbps(ga)}" if gb and ga else ""
        causes = _idle_causes(d, 2)
        rest = f"; the rest is the idle change ({causes})" if causes and d.bytes_gap_named else ""
        return (f"Explained by bytes: it moves {moved} and the {speed(s)} matches that within {gap:.0f}%: "
                f"{kt}, both memory-bound{rate}{rest}.")
    if how == "kernels":
        ch = d.busy_change_us
        verb = "shrank" if ch < 0 else "grew"
        sense = "saved" if saved > 0 else "lost"
        tops = ""
        if tb_ops and ta_ops:
            tb, ta = tb_ops[0], ta_ops[0]
            tops = (f"; the top op was {tb.name} and is now {ta.name}" if tb.name != ta.name
                    else f"; {ta.name} stays the top op")
        launches = f" (launch calls {_times(d, lr)}: not the lever)" if d.launches_moved else ""
        return (f"Explained by kernel time: kernel busy time {verb} by {duration_us(ch)}, {share(ch / -saved)} of the "
                f"{duration_us(saved)} {sense}{_peer_wait_part(d, ch)}{launches}{tops}; regime {regime_b} → "
                f"{regime_a}.")
    if how == "launches":
        pb, pa = b.span_per_launch_us, a.span_per_launch_us
        cost = ""
        if d.launch_cost_changed:
            cost = (f"; each launch call costs {duration_us(pa)} of span instead of {duration_us(pb)}, "
                    f"hence {times(s)} and not {times(lr)}")
        bytes_note = (f"; bytes are no lever here ({_times(d, br)} bytes, while kernels are busy only "
                      f"{share(b.kernel_busy_us / b.span_us)} → {share(a.kernel_busy_us / a.span_us)} "
                      "of the span)") if br is not None else ""
        return (f"Explained by launches: both are overhead-bound (the GPU idles {share(b.idle_share)} and "
                f"{share(a.idle_share)} of the {span}), so time follows launch calls: {_times(d, lr)} of them"
                f"{cost}{bytes_note}.")
    if how in {c.value for c in Cause}:
        how = Cause(how)
        ch = d.idle_change_us[how]
        part = -ch / saved
        extra = ""
        if how is Cause.LAUNCH_OVERHEAD and lr is not None:
            extra = (f"; {_times(d, lr)} launch calls" + (" for the same kernels" if d.same_kernels else "")
                     + (" (CUDA-graph replays)" if a.graph_launches > b.graph_launches else ""))
        verb = "shrank" if ch < 0 else "grew"
        sense = "saved" if saved > 0 else "lost"
        return (f"Explained by {CAUSE_WORDS[how]}: its idle {verb} by {duration_us(ch)}, {share(part)} of the "
                f"{duration_us(saved)} {sense}{extra}; regime {regime_b} → {regime_a}.")
    cause, part = d.mixed_cause
    parts = []
    if br is not None:
        parts.append(f"bytes {_times(d, br)} against {a_or_an(speed(s))}")
    if lr is not None:
        parts.append(f"launch calls {_times(d, lr)}")
    if cause is not None:
        parts.append(f"{CAUSE_WORDS[cause]} idle moved by {share(part)} of the time {'saved' if saved > 0 else 'lost'}")
    parts.append(f"kernel busy time {signed_us(d.busy_change_us)}")
    return (f"Explained by a mix: no single lever accounts for it ({'; '.join(parts)}; regime "
            f"{regime_b} → {regime_a}).")
