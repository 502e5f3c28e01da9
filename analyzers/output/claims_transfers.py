"""Relations on data transfer. Part of the claim checker (tracetriage.analyzers.output.claims runs them with the
rest); each reads only the JSON contract (docs/json.md).

- pinned memory is asked for only where the host-to-device copies hold PIN_PAYS of the span;
- the idle's data transfer is copies over the link (host<->device, peer), never device-to-device copies or memsets;
- a copies Next's because gives the data-transfer share of the span, not the whole idle;
- a transfer-bound Regime of a span that is not idle-bound says the Measured line's copy and kernel times, the copies
  the longer (voice.transfer_bound), and the copies it says of the span's end fit in that end.
"""
from __future__ import annotations

from tracetriage.analyzers.model.verdicts import Cause, Experiment
from tracetriage.analyzers.voice.common import PIN_PAYS

_SHARE_TOLERANCE = 0.01   # a share said in whole percents: within a point of its field


def transfer_relations(said, out: dict, lines: list[str]) -> list[str]:
    """The data-transfer relations' breaches, in words (empty: none)."""
    return (_copies_because_holds_the_copies_share(said, out) + _transfers_are_over_the_link(out, lines)
            + _pinning_only_where_the_copies_count(out, lines) + _copies_hold_the_device(said, out))


def _copies_hold_the_device(said, out: dict) -> list[str]:
    """regime.transfer.copy_us is copy_us, regime.transfer.kernel_us kernel_busy_us, and the first exceeds the second;
    regime.transfer.after_kernels_us <= regime.transfer.tail_us."""
    if said is None or said.get("regime.transfer.copy_us") is None:
        return []
    copy_us, kernel_us = said.value("regime.transfer.copy_us"), said.value("regime.transfer.kernel_us")
    bad = []
    if abs(copy_us - (out.get("copy_us") or 0.0)) > 1.0 or abs(kernel_us - (out.get("kernel_busy_us") or 0.0)) > 1.0:
        bad.append(f"the Regime line's copies ({copy_us / 1e3:.1f} ms) and kernels ({kernel_us / 1e3:.1f} ms) are not "
                   "the Measured line's")
    if copy_us <= kernel_us:
        bad.append("the Regime line says transfer-bound where the copies hold the device no longer than the kernels")
    tail, alone = said.value("regime.transfer.tail_us"), said.value("regime.transfer.after_kernels_us")
    if tail is not None and alone is not None and alone > tail + 1.0:
        bad.append(f"the Regime line says copies run {alone / 1e3:.1f} ms of the {tail / 1e3:.1f} ms past the last "
                   "kernel")
    return bad


def _pinning_only_where_the_copies_count(out: dict, lines: list[str]) -> list[str]:
    """A Next that asks for pinned memory (pin_memory=True) has host-to-device copies holding PIN_PAYS of the span
    to speed: six 3.5 µs copies of a 4.7 ms span (a public RTX 3080 MLP at batch 16) buy nothing pinned."""
    if "pin_memory=True" not in lines[4] or "pinned already" in lines[4]:
        return []
    span = out.get("span_us") or 0.0
    copies = (((out.get("idle") or {}).get("evidence") or {}).get("data_transfer") or {}).get("copies") or []
    h2d = sum(c.get("us", 0.0) for c in copies if "HtoD" in c.get("name", ""))
    if span and h2d < PIN_PAYS * span:
        return [f"the Next asks for pin_memory=True, but the host-to-device copies hold {100 * h2d / span:.2f}% of "
                f"the span (under {100 * PIN_PAYS:.0f}%: pinning them buys nothing worth a clause)"]
    return []


def _is_device_work(copy_name: str) -> bool:
    return "DtoD" in copy_name or "Device -> Device" in copy_name or copy_name.startswith("Memset")


def _transfers_are_over_the_link(out: dict, lines: list[str]) -> list[str]:
    """The idle's data transfer is the GPU waiting on copies over the link (host<->device, peer): a DtoD copy or a
    memset is device work, never among the copies it waits on, nor named on the Idle line (fresh4
    gpt2_manual_attention-before: "mostly data transfer: ... 90x Memcpy DtoD (Device -> Device), 18.12 GB" on a
    97%-busy device)."""
    ev = (out.get("idle", {}).get("evidence") or {}).get(Cause.DATA_TRANSFER.value) or {}
    bad = [f"the idle's data transfer counts {c['name']} (device work, not a copy over the link)"
           for c in ev.get("copies") or [] if _is_device_work(c.get("name", ""))]
    idle_line = lines[2] if len(lines) > 2 else ""
    if "mostly data transfer" in idle_line and ("DtoD" in idle_line.split("mostly data transfer")[1]
                                                or "Memset" in idle_line.split("mostly data transfer")[1]):
        bad.append("the Idle line names a device-to-device copy or a memset as the data transfer it waits on")
    transfer = out.get("idle", {}).get("by_cause_us", {}).get(Cause.DATA_TRANSFER.value, 0.0)
    if transfer > (out.get("idle_us") or 0.0) + 0.5:
        bad.append(f"the idle's data transfer ({transfer:.1f} µs) is longer than the idle ({out.get('idle_us')} µs)")
    return bad


def _copies_because_holds_the_copies_share(said, out: dict) -> list[str]:
    """A copies Next's because says the compute idles while copies run: the data-transfer share, not the whole idle
    (bert_pad_max_length-before: "compute idles 9% while copies run" where the Idle line gave data transfer 1%)."""
    span = out.get("span_us") or 0
    nx = out.get("next_experiment") or {}
    bad = []
    for key, kind in (("next", nx.get("kind")), ("next.own", (nx.get("own_fix") or {}).get("kind"))):
        if kind != Experiment.OVERLAP_COPIES.value or not span:
            continue
        c = said.get(f"{key}.because.idle_share")
        copies = out["idle"]["by_cause_us"].get(Cause.DATA_TRANSFER.value, 0.0) / span
        if c is not None and abs(copies - c["value"]) > _SHARE_TOLERANCE:
            bad.append(f"the copies Next's because says compute idles {c['said']} while copies run, the Idle line "
                       f"gives data transfer {100 * copies:.1f}%")
    return bad
