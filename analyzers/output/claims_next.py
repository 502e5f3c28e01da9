"""Claim relations of the Next line: its because agrees with its prediction (1), it saves something and the
waste line saves least (2). tracetriage.analyzers.output.claims lists every relation and runs them."""
from __future__ import annotations

from tracetriage.analyzers.model.verdicts import LOOP_IDLES_TOO, Experiment
from tracetriage.analyzers.output.claims_said import CAUSE_OF_KIND, FLOOR_TOLERANCE, SAID_ZERO, SHARE_TOLERANCE, Said
from tracetriage.analyzers.voice.claims import COMPILED_IDLE_SHARE, steady_idle_share

_SETUP_TOLERANCE = 0.05   # the warm-up's saving and its set-up share sit on different spans (traced vs GPU)


# --- 1. the because agrees with the prediction ---------------------------------------------------------------

def because_rests_on_something(said: Said, nx: str) -> list[str]:
    return [f"the Next's because rests on nothing ({c['key']} said {c['said']!r})"
            for c in said.under(f"{nx}.because.") if c["value"] <= 0 or SAID_ZERO.match(c["said"])]


def warm_up_saves_at_most_its_set_up(said: Said, nx: str) -> list[str]:
    """A warm-up's saving is the set-up share its because names: one figure, said twice (issue 33: "−7% ..., because
    49% of the span is one-time set-up"; heldout-user7 tp2x4090: "−8% ..., because 52% ...; of it, 8% lies on the
    critical path", beside a 372 ms set-up gap the device idled through on the only critical path)."""
    setup, saving = said.get(f"{nx}.because.setup_share"), said.get(f"{nx}.saving")
    if setup is None or saving is None or saving["value"] <= 0:
        return []
    if abs(saving["value"] - setup["value"]) > SHARE_TOLERANCE:
        return [f"the warm-up predicts {saving['said']} but says {setup['said']} of the span is set-up"]
    return []


def warm_up_holds_the_first_compilations(said: Said, out: dict) -> list[str]:
    """torch.compile compiling functions for the first time is one-time set-up, on the critical path while the device
    idles through it: a warm-up's because gives at least the share of the span the Idle line's compile idle is, and
    its prediction saves at least that (heldout-user6 rtx4090d_compile_warmup: "90% of the idle is inside
    torch.compile compiling", then "−3% ..., because 32% of the span is one-time set-up ...; of it, 3% ... lies on
    the critical path")."""
    nx = out.get("next_experiment") or {}
    compile_ = next((x for x in out.get("framework") or [] if x["construct"] == "compile"), None)
    span = out.get("span_us") or 0.0
    if nx.get("kind") != Experiment.WARM_UP.value or compile_ is None or not compile_.get("first_compilations") \
            or not span:
        return []
    held = compile_.get("idle_us", 0.0) / span
    bad = []
    setup, saving = said.get("next.because.setup_share"), said.get("next.saving")
    if setup is not None and setup["value"] < held - _SETUP_TOLERANCE:
        bad.append(f"the warm-up's because says {setup['said']} of the span is set-up, but the device idles "
                   f"{100 * held:.0f}% of it while torch.compile compiles functions for the first time (set-up too)")
    if saving is not None and saving["value"] < held - _SETUP_TOLERANCE:
        bad.append(f"the warm-up predicts {saving['said']}, but the device idles {100 * held:.0f}% of the span while "
                   "torch.compile compiles functions for the first time, all of it on the critical path")
    return bad


def launch_because_counts_only_eager_launches(said: Said, out: dict) -> list[str]:
    """A launch-bound because on a trace that replays CUDA graphs says how many kernels are launched one by one
    outside them: the replayed ones are no launches to cut."""
    ev = out["idle"]["evidence"].get("launch_overhead") or {}
    graphed, kernels = ev.get("graphed_kernels", 0), ev.get("kernels", 0)
    if not (graphed and said.get("next.because.kernels") is not None and graphed < kernels):
        return []
    eager = said.value("next.because.eager_kernels")
    if eager != kernels - graphed:
        return [f"the Next's because counts {kernels} kernels as launches to cut, {graphed} of them replayed from "
                "CUDA graphs" + ("" if eager is None else f" (it says {eager:g} outside them)")]
    return []


def launch_because_has_short_kernels(said: Said, nx: str) -> list[str]:
    launch, kernel = said.get(f"{nx}.because.launch_outlasts_kernel_us"), said.get(f"{nx}.because.kernel_median_us")
    if launch is None or kernel is None or kernel["value"] < launch["value"]:
        return []
    return [f"the Next says each launch costs more than a kernel's run, but kernels run {kernel['said']} against a "
            f"{launch['value']} µs launch call"]


def saving_within_what_it_removes(said: Said, nx: str) -> list[str]:
    """A lever whose edit only takes time out (the allocator's calls and the drains they wait for) saves no more
    than that time: its saving is the span's fall, which cannot exceed what left the graph."""
    removed, saving, base = (said.value(f"{nx}.bound.removed_us"), said.value(f"{nx}.saving"),
                             said.value(f"{nx}.baseline_us"))
    if removed is None or saving is None or not base or saving * base <= removed * (1 + FLOOR_TOLERANCE) + 1.0:
        return []
    return [f"the Next saves {said.get(f'{nx}.saving')['said']} ({saving * base / 1000:.1f} ms) but its edit takes out "
            f"only {removed / 1000:.1f} ms"]


# --- 2. the Next saves something, the waste saves least -------------------------------------------------------

def next_saves_something(said: Said, nx: str) -> list[str]:
    c = said.get(f"{nx}.saving")
    if c is None or (c["value"] > 0 and not SAID_ZERO.match(c["said"])):
        return []
    bare = said.get(f"{nx}.unprofiled_saving")    # (chosen by its saving without the profiler: that one is said)
    if bare is not None and bare["value"] > 0 and not SAID_ZERO.match(bare["said"]):
        return []
    return [f"the Next is predicted to save nothing ({c['said']})"]


def waste_saves_least(said: Said, lines: list[str]) -> list[str]:
    waste, nxt = said.get("waste.saving"), said.get("next.saving")
    if waste is None:
        return []
    bad = []
    if waste["said"].startswith("+") and f"predicted to slow the run ({waste['said']})" not in lines[4]:
        bad.append(f"the waste lever slows the run but is phrased as a prediction of a saving: {waste['said']}")
    w_bare, n_bare = said.get("waste.unprofiled_saving"), said.get("next.unprofiled_saving")
    if w_bare is not None and n_bare is not None:   # chosen by their savings without the profiler: those order them
        waste, nxt = w_bare, n_bare
    if nxt is not None and nxt["value"] > 0 and waste["value"] > nxt["value"]:
        bad.append(f"the waste lever saves {waste['said']}, more than the Next's {nxt['said']}")
    return bad


def loop_fix_within_the_warm_up(said: Said, out: dict) -> list[str]:
    """The loop's fix said after a warm-up saves no more than the span the warm-up leaves (its replay on the cold trace
    would otherwise price the cold start twice)."""
    if (out.get("next_experiment") or {}).get("kind") != Experiment.WARM_UP.value:
        return []
    then, left, base = said.value("next.then.saving"), said.value("next.predicted_us"), said.value("next.baseline_us")
    if then is None or left is None or not base or then * base <= left * (1 + FLOOR_TOLERANCE):
        return []
    return [f"the loop's fix after the warm-up saves {said.get('next.then.saving')['said']} of the span "
            f"({then * base / 1000:.1f} ms), more than the {left / 1000:.1f} ms the warm-up leaves"]


def waste_agrees_with_the_steady_steps(said: Said, out: dict) -> list[str]:
    """"Would waste the week: optimising what this profile shows: its biggest gaps do not recur" only where the steps
    after the cold start idle under LOOP_IDLES_TOO of each: their gaps recur (heldout-user6 rtx4090d_graphbreaks,
    beside "a steady step idles 90% of its time"; heldout-user17 r18compile, 35%, mostly launch overhead)."""
    steady = steady_idle_share(out.get("steps"))
    waste = said.get("waste.nothing_recurs")
    if waste is not None and out.get("regime") not in (None, "overhead") and "what this profile shows" in waste["said"]:
        # (heldout-user18 llama4l_4090: the kernels after the cold start are communication-bound and recur)
        return [f"the waste line says nothing the profile shows recurs, but the Regime line bounds the work after the "
                f"cold start ({out.get('regime')}): it recurs"]
    if waste is None or steady is None or steady < LOOP_IDLES_TOO:
        return []
    return [f"the waste line says the profile's gaps do not recur, but a steady step idles {100 * steady:.0f}% of its "
            "time: the loop's gaps recur"]


COLD_FIRST_STEP = 0.9   # this share of a cause's idle over the steps in the first one: it is the cold start's


def idle_next_recurs(out: dict) -> list[str]:
    """An idle cause's Next (take the host work off the critical path, remove the syncs ...) rests on idle that recurs:
    where the trace repeats a step three times or more and the first step holds COLD_FIRST_STEP of that cause's idle
    over the steps, the gaps are the cold start's, a warm-up's to remove (heldout-user6 rtx4090d_resnet_compiled:
    "take the host work off the critical path ... because ... median gap 8.73 ms", every one of those gaps in the
    first iteration, beside a Caveat calling one of them one-time set-up)."""
    nx = out.get("next_experiment") or {}
    cause = CAUSE_OF_KIND.get(nx.get("kind") or "")
    per = ((out.get("steps") or {}).get("per_step") or {}).get("idle_by_cause_us", {}).get(cause or "")
    if cause is None or not per or len(per) < 3 or not sum(per):
        return []
    if per[0] < COLD_FIRST_STEP * sum(per):
        return []
    return [f"the Next removes {cause.replace('_', ' ')}, but {100 * per[0] / sum(per):.0f}% of that idle over the "
            f"{len(per)} steps is in the first one: a cold start the steady steps never pay"]


def no_graphs_for_graphs(said: Said, out: dict) -> list[str]:
    graphs = (out["idle"]["evidence"].get("launch_overhead") or {}).get("graph_launches", 0)
    if graphs and said.get("waste.lever.cuda_graphs") is not None:
        return [f"the trace replays CUDA graphs already ({graphs} graph launches), yet CUDA graphs would waste the "
                "week"]
    return []


def compiled_already(framework: list[dict]) -> bool:
    """The idle sits in torch.compile's code: compiled regions and compiled functions' backward hold at least
    COMPILED_IDLE_SHARE of it (the report's own rule, voice.report._compiled_already)."""
    return sum(x.get("idle_share", 0.0) for x in framework
               if x["construct"] == "compiled" or any("CompiledFunction" in n for n in x.get("names", ()))) \
        >= COMPILED_IDLE_SHARE


def no_compile_for_compiled(said: Said, out: dict) -> list[str]:
    asks = said.get("next.asks.torch_compile")
    if compiled_already(out.get("framework") or []) and asks is not None:
        return ["the trace runs torch.compile's code already, yet the Next says to torch.compile it"]
    if asks is not None and asks["value"] == 0:   # the fuse lever's chains: none to fuse
        return ["the Next says torch.compile to fuse where the what-if finds no eager chain to fuse"]
    if asks is not None and said.get("waste.lever.fuse") is not None:
        return ["the Next says torch.compile to fuse, and its own waste line says fusing would waste the week"]
    return []
