"""Claim relation 8: an idle-bound span names what it waits on (the Regime line's bound, the Idle line's
dominant cause, the construct that holds it). tracetriage.analyzers.output.claims lists every relation and
runs them."""
from __future__ import annotations

from tracetriage.analyzers.model.verdicts import Cause, Experiment
from tracetriage.analyzers.output.claims_said import SHARE_TOLERANCE, Said
from tracetriage.analyzers.voice.claims import INPUT_BOUND_IDLE_SHARE, STEADY_IDLE_BOUND, steady_idle_share
from tracetriage.analyzers.voice.common import SETUP_HOLDS_HOST_WORK

# --- 8. an idle-bound span names what it waits on --------------------------------------------------------------

_SET_UP_KINDS = ("warm_up", "profile_replays")
# the JSON's regime_detail.bound and the words the Regime line opens with: the two say one thing (heldout-user3: the
# text said transfer-bound or set-up-bound where the JSON said only "overhead")
_BOUND_WORDS = {"overhead": "overhead-bound", "set_up": "set-up-bound", "input": "input-bound",
                "compile": "compile-bound", "transfer": "transfer-bound", "host": "host-bound", "sync": "sync-bound",
                "fp32_cuda_cores": "GPU-bound in fp32 math",
                "decode_memory": "memory-bound decode", "cudnn_trials": "bound by cuDNN's benchmark trials"}


def _construct_idle_share(out: dict, construct: str) -> float:
    return next((x.get("idle_share", 0.0) for x in out.get("framework") or [] if x["construct"] == construct), 0.0)


def idle_bound_says_what_it_waits_on(said: Said, out: dict, lines: list[str]) -> list[str]:
    bad = []
    kind = (out.get("next_experiment") or {}).get("kind")
    loader, compiling = _construct_idle_share(out, "dataloader"), _construct_idle_share(out, "compile")
    idle = out.get("idle") or {}
    idle_us = sum((idle.get("by_cause_us") or {}).values())
    copying = (idle.get("by_cause_us") or {}).get("data_transfer", 0.0) / idle_us if idle_us else 0.0
    hosting = (idle.get("by_cause_us") or {}).get("host_work", 0.0) / idle_us if idle_us else 0.0
    launching = (idle.get("by_cause_us") or {}).get("launch_overhead", 0.0) / idle_us if idle_us else 0.0
    syncing = (idle.get("by_cause_us") or {}).get("synchronization", 0.0) / idle_us if idle_us else 0.0
    host_ev = (idle.get("evidence") or {}).get("host_work") or {}
    host_is_setup = bool(host_ev.get("total_us")) and \
        host_ev.get("setup_us", 0.0) >= SETUP_HOLDS_HOST_WORK * host_ev["total_us"]
    steady = steady_idle_share(out.get("steps"))
    loop_idles = steady is not None and steady > STEADY_IDLE_BOUND
    dominant = idle.get("dominant")
    if lines[3].startswith("Regime: set-up-bound") and kind == Experiment.WARM_UP.value:
        if loop_idles:
            bad.append(f"the Regime line says set-up-bound, but the steady steps idle {100 * steady:.0f}% of their "
                       "time: the loop is idle-bound after the cold start too")
        if dominant == Cause.LAUNCH_OVERHEAD.value:
            bad.append("the Regime line says set-up-bound, not launch overhead, where the Idle line's dominant cause "
                       "is launch overhead")
    said_steady = said.get("regime.steady_idle_share")
    if said_steady is not None and (steady is None or abs(said_steady["value"] - steady) > SHARE_TOLERANCE):
        bad.append(f"the Regime line says a steady step idles {said_steady['said']}, its steps give "
                   + ("none" if steady is None else f"{100 * steady:.1f}%"))
    if "not launch overhead" in lines[3] and dominant == Cause.LAUNCH_OVERHEAD.value:
        bad.append("the Regime line says 'not launch overhead' where the Idle line's dominant cause is launch overhead")
    if lines[3].startswith("Regime: overhead-bound"):
        if kind == Experiment.PROFILE_REPLAYS.value or (kind == Experiment.WARM_UP.value and not loop_idles
                                         and dominant != Cause.LAUNCH_OVERHEAD.value):
            bad.append("the Regime line says overhead-bound of a cold start (its Next is one-time set-up)")
        elif loader >= INPUT_BOUND_IDLE_SHARE:
            bad.append(f"the Regime line says overhead-bound where {100 * loader:.0f}% of the idle is inside the "
                       "DataLoader (input-bound)")
        elif compiling >= INPUT_BOUND_IDLE_SHARE:
            bad.append(f"the Regime line says overhead-bound where {100 * compiling:.0f}% of the idle is "
                       "torch.compile compiling (compile-bound)")
        elif copying >= INPUT_BOUND_IDLE_SHARE and idle.get("dominant") == "data_transfer":
            bad.append(f"the Regime line says overhead-bound where {100 * copying:.0f}% of the idle is copies "
                       "(transfer-bound), the Idle line's own dominant cause")
        elif hosting >= INPUT_BOUND_IDLE_SHARE and dominant == "host_work" and not host_is_setup \
                and launching < hosting / 2:
            bad.append(f"the Regime line says overhead-bound where {100 * hosting:.0f}% of the idle is the host "
                       "running work that issues no GPU work (host-bound), the Idle line's own dominant cause")
        elif syncing >= INPUT_BOUND_IDLE_SHARE and dominant == "synchronization" and launching < syncing / 2:
            bad.append(f"the Regime line says overhead-bound where {100 * syncing:.0f}% of the idle is the host "
                       "waiting in syncs (sync-bound), the Idle line's own dominant cause")
    for key, field, where in (("regime.input_share", loader, "inside the DataLoader"),
                              ("regime.compile_share", compiling, "torch.compile compiling"),
                              ("regime.transfer_share", copying, "waiting on copies"),
                              ("regime.host_share", hosting, "the host running work that issues no GPU work"),
                              ("regime.sync_share", syncing, "the host waiting in syncs")):
        c = said.get(key)
        if c is not None and (abs(c["value"] - field) > SHARE_TOLERANCE or field < INPUT_BOUND_IDLE_SHARE):
            bad.append(f"the Regime line says {c['said']} of the idle is {where}, its field is {100 * field:.1f}%")
    bound = (out.get("regime_detail") or {}).get("bound")
    if bound in _BOUND_WORDS and not lines[3].startswith(f"Regime: {_BOUND_WORDS[bound]}"):
        bad.append(f"the Regime line does not say {_BOUND_WORDS[bound]!r}, its JSON regime_detail.bound {bound!r}")
    setup, because = said.get("regime.setup_share"), said.get("next.because.setup_share")
    if setup is not None and kind not in _SET_UP_KINDS:
        bad.append("the Regime line says set-up-bound, but the Next is no warm-up")
    if setup is not None and because is not None and abs(setup["value"] - because["value"]) > SHARE_TOLERANCE:
        bad.append(f"the Regime line says set-up holds {setup['said']} of the span, the Next's because "
                   f"{because['said']}")
    return bad
