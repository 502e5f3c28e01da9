"""The claim checker: do a report's sentences agree with each other and with the analysis under them?

    problems = claims.check(serialize.report(analysis))    # [] when every claim holds

`output.invariants` checks that time adds up; this module checks what the sentences *claim* (issue 33):

0. the numbers it reads are the analysis's fields: the Idle line's split is each cause's share of the span, the
   Next's prediction its lever's ratio, the idle share its because gives the Idle line's;
1. a Next's because agrees with its prediction: no because that rests on nothing ("0 times the device
   drained", "0% of the span is set-up"), a warm-up's saving no larger than the set-up it removes, a
   launch-bound because only where kernels are shorter than a launch;
2. no Next predicted to save 0% or to slow the run, and a "would waste the week" lever that saves no more than
   the Next, is never phrased as a saving when the replay predicts it slows the run, and is not CUDA graphs on a
   trace that replays graphs already;
3. a verdict the health check withholds is given nowhere (no shapes: no compute/memory split);
4. a device capability named in advice exists on the device (fp8 tensor cores only where the peaks have an fp8
   rate above fp16's, TF32 and bf16 only where they beat fp32), and the workers asked of a DataLoader are not
   already there (_MultiProcessingDataLoaderIter);
5. prefill/decode phases (TTFT, per token) only with a decode of more than one step after its prefill, and a
   TTFT longer than the GPU span says that host time before the first kernel is counted;
6. one bandwidth peak per trace: every "GB/s peak" a line names is the peaks' own;
7. no number rounded to nothing stated as a fact ("0 FLOP/byte", "0 GB/s", "0 TFLOP/s").

`check_ranks`, `check_whatif` and `check_diff` do the same for the other outputs. It reads only the JSON
contract (docs/json.md), like the invariants, so it checks what a user gets. The relations are each a
function below, named after what they verify.
"""
from __future__ import annotations

import re

from tracetriage.analyzers.model.units import gbps
from tracetriage.analyzers.voice.claims import COMPILED_IDLE_SHARE

_PREDICTED = re.compile(r"\(predicted ([−+]?)(\d+)%")
_WASTE = re.compile(r"Would waste the week: (.*)$")
_WASTE_PREDICTED = re.compile(r"predicted ([−+]?)(\d+)%")
_SETUP_SHARE = re.compile(r"because (\d+)% of the span is one-time set-up")
_LAUNCH_BECAUSE = re.compile(r"kernels that run ([\d,.]+) (µs|ms|s) \(median\) while each launch costs the host more")
_NOTHING_BECAUSE = re.compile(r"because (0 times|0% of|0\.0 µs)|median gap 0\.0 µs")
_ROUNDED_TO_NOTHING = re.compile(r"(?<![\d.,])0 (FLOP/byte|GB/s|TFLOP/s)")
_GBPS_PEAK = re.compile(r"([\d,]+(?:\.\d+)? GB/s) peak|GB/s of (?:the |an? )?([\d,]+(?:\.\d+)? GB/s)")
_REGIME_SPLIT = re.compile(r"\d+% (?:is )?(?:compute|memory)-bound")
_UNIT_US = {"µs": 1.0, "ms": 1e3, "s": 1e6}
_SETUP_TOLERANCE = 5      # percentage points: the two shares round separately and sit on different spans


def check(out: dict) -> list[str]:
    """The claims a report breaks, in words (empty: none)."""
    if "ranks" in out:
        return check_ranks(out)
    lines = out.get("lines") or []
    if len(lines) < 5:
        return []
    nxt = lines[4]
    return (_numbers_are_the_fields(out, lines)
            + _because_rests_on_something(nxt) + _warm_up_saves_at_most_its_set_up(nxt)
            + _launch_because_has_short_kernels(nxt, out) + _next_saves_something(nxt)
            + _waste_saves_least(nxt) + _no_graphs_for_graphs(nxt, out) + _no_compile_for_compiled(nxt, out)
            + _withheld_verdicts_not_given(out, lines)
            + _device_can_take_the_advice(out, lines) + _phases_only_where_they_change(out, lines)
            + _one_peak(out, lines) + _no_number_rounded_to_nothing(lines))


def check_ranks(out: dict) -> list[str]:
    """Each rank's report, and the ranks' own lines: no number rounded to nothing."""
    bad = [f"rank {r.get('trace', {}).get('rank')}: {p}" for r in out["ranks"] for p in check(r)]
    return bad + _no_number_rounded_to_nothing(out.get("lines") or [])


def check_whatif(out: dict) -> list[str]:
    """A what-if: each lever's saving is its baseline less its prediction, and the levers are in order."""
    bad = []
    base = out.get("baseline_us")
    levers = out.get("levers") or []
    for lv in levers:
        if base and abs(base - lv["predicted_us"] - lv["saving_us"]) > 0.01 * max(base, 1.0):
            bad.append(f"lever {lv['lever']}: saving {lv['saving_us']} µs is not {base} − {lv['predicted_us']}")
    if [lv["predicted_us"] for lv in levers] != sorted(lv["predicted_us"] for lv in levers):
        bad.append("the levers are not in the order of their predicted span")
    return bad


def check_diff(out: dict) -> list[str]:
    """A diff's sentences: no number rounded to nothing stated as a fact."""
    return _no_number_rounded_to_nothing(out.get("lines") or [])


# --- 0. every number checked here is a field's -------------------------------------------------------------

_CAUSE_SHARE = re.compile(r"(launch overhead|host work|synchronization|data transfer|other) (\d+)%")
_BECAUSE_IDLES = re.compile(r"because (?:the GPU|compute) idles (\d+)%")
_CAUSE_KEYS = {"launch overhead": "launch_overhead", "host work": "host_work", "synchronization": "synchronization",
               "data transfer": "data_transfer", "other": "other"}


def _numbers_are_the_fields(out: dict, lines: list[str]) -> list[str]:
    """The Idle line's split is each cause's idle over the span, and the Next's prediction is its lever's ratio
    (within a point: the figures round separately)."""
    bad = []
    span = out.get("span_us") or 0
    split = lines[2].split(":", 2)[-1].split(";")[0] if lines[2].startswith("Idle: the GPU is idle") else ""
    for m in _CAUSE_SHARE.finditer(split):
        field = out["idle"]["by_cause_us"].get(_CAUSE_KEYS[m.group(1)], 0.0)
        if span and abs(100 * field / span - int(m.group(2))) > 1:
            bad.append(f"the Idle line says {m.group(1)} {m.group(2)}%, its field is {100 * field / span:.1f}%")
    said_idle = _BECAUSE_IDLES.search(lines[4])
    if said_idle and span and abs(100 * out["idle_us"] / span - int(said_idle.group(1))) > 1:
        bad.append(f"the Next's because says the GPU idles {said_idle.group(1)}%, the Idle line's share is "
                   f"{100 * out['idle_us'] / span:.1f}%")
    nx = out.get("next_experiment") or {}
    pred = _PREDICTED.search(lines[4].split("Would waste the week:")[0])
    ratio = nx.get("predicted_ratio")
    if pred is not None and ratio is not None:
        said = int(pred.group(2)) * (-1 if pred.group(1) == "+" else 1)
        if abs(100 * (1 - ratio) - said) > 1:
            bad.append(f"the Next says {pred.group(1)}{pred.group(2)}%, its lever's ratio is {ratio}")
    return bad


# --- 1. the because agrees with the prediction ---------------------------------------------------------------

def _because_rests_on_something(nxt: str) -> list[str]:
    m = _NOTHING_BECAUSE.search(nxt)
    return [f"the Next's because rests on nothing ({m.group(0)!r}): {nxt}"] if m else []


def _warm_up_saves_at_most_its_set_up(nxt: str) -> list[str]:
    setup, pred = _SETUP_SHARE.search(nxt), _PREDICTED.search(nxt)
    if setup is None or pred is None or pred.group(1) != "−":
        return []
    if int(pred.group(2)) > int(setup.group(1)) + _SETUP_TOLERANCE:
        return [f"the warm-up predicts −{pred.group(2)}% but says {setup.group(1)}% of the span is set-up"]
    return []


def _launch_because_has_short_kernels(nxt: str, out: dict) -> list[str]:
    m = _LAUNCH_BECAUSE.search(nxt)
    launch = (out["idle"]["evidence"].get("launch_overhead") or {}).get("launch_call_median_us")
    if m is None or not launch:
        return []
    kernel_us = float(m.group(1).replace(",", "")) * _UNIT_US[m.group(2)]
    if kernel_us >= launch:
        return [f"the Next says each launch costs more than a kernel's run, but kernels run {m.group(1)} "
                f"{m.group(2)} against a {launch} µs launch call"]
    return []


# --- 2. the Next saves something, the waste saves least -------------------------------------------------------

def _next_saves_something(nxt: str) -> list[str]:
    m = _PREDICTED.search(nxt.split("Would waste the week:")[0])
    if m is None:
        return []
    if m.group(1) != "−" or int(m.group(2)) == 0:
        return [f"the Next is predicted to save nothing ({m.group(1)}{m.group(2)}%)"]
    return []


def _waste_saves_least(nxt: str) -> list[str]:
    waste, pred = _WASTE.search(nxt), _PREDICTED.search(nxt.split("Would waste the week:")[0])
    if waste is None:
        return []
    w = _WASTE_PREDICTED.search(waste.group(1))
    if w is None:
        return []
    bad = []
    if w.group(1) == "+":
        bad.append(f"the waste lever slows the run but is phrased as a prediction of a saving: {waste.group(1)}")
    if pred is not None and pred.group(1) == "−" and w.group(1) == "−" and int(w.group(2)) > int(pred.group(2)):
        bad.append(f"the waste lever saves {w.group(2)}%, more than the Next's {pred.group(2)}%")
    return bad


def _no_graphs_for_graphs(nxt: str, out: dict) -> list[str]:
    graphs = (out["idle"]["evidence"].get("launch_overhead") or {}).get("graph_launches", 0)
    waste = _WASTE.search(nxt)
    if graphs and waste is not None and waste.group(1).startswith("CUDA graphs"):
        return [f"the trace replays CUDA graphs already ({graphs} graph launches), yet CUDA graphs would waste the "
                "week"]
    return []


def compiled_already(framework: list[dict]) -> bool:
    """The idle sits in torch.compile's code: compiled regions and compiled functions' backward hold at least
    COMPILED_IDLE_SHARE of it (the report's own rule, voice.report._compiled_already)."""
    return sum(x.get("idle_share", 0.0) for x in framework
               if x["construct"] == "compiled" or any("CompiledFunction" in n for n in x.get("names", ()))) \
        >= COMPILED_IDLE_SHARE


def _no_compile_for_compiled(nxt: str, out: dict) -> list[str]:
    lever = nxt.split(" because ")[0]
    if compiled_already(out.get("framework") or []) and "torch.compile to fuse" in lever:
        return ["the trace runs torch.compile's code already, yet the Next says to torch.compile it"]
    return []


# --- 3. a withheld verdict is given nowhere --------------------------------------------------------------------

def _withheld(out: dict) -> set[str]:
    health = out.get("health") or {}
    return {v for f in health.get("findings", []) if f.get("shown") for v in f.get("withholds", [])}


def _withheld_verdicts_not_given(out: dict, lines: list[str]) -> list[str]:
    withheld = _withheld(out)
    bad = []
    if "regime" in withheld:
        said = [m.group(0) for line in lines for m in _REGIME_SPLIT.finditer(line)]
        if said:
            bad.append(f"the health check withholds the regime, yet a line says {said[0]!r}")
    if "whatif" in withheld and any("(predicted " in line for line in lines):
        bad.append("the health check withholds the what-if, yet a line gives a prediction")
    return bad


# --- 4. the device can take the advice ------------------------------------------------------------------------

def _rates(out: dict) -> dict[str, float]:
    return ((out.get("peaks") or {}).get("limit_flops_per_s")) or {}


def _device_can_take_the_advice(out: dict, lines: list[str]) -> list[str]:
    rates, advice = _rates(out), lines[4]
    bad = []
    iters = [n for f in out.get("framework") or [] for n in f.get("names") or []]
    if "num_workers=4" in advice and any("_MultiProcessingDataLoaderIter" in n for n in iters):
        bad.append("the Next asks for DataLoader workers, but the trace's DataLoader already runs them")
    if "fp8" in advice and not rates.get("fp8", 0) > rates.get("fp16", 0):
        bad.append(f"the Next names fp8 on {out['trace'].get('device_name') or 'a device'} without fp8 tensor cores")
    for dtype, said in (("tf32", "TF32"), ("bf16", "bf16")):
        if (said in advice or dtype in advice.split("ridge")[0]) and rates and \
                not rates.get(dtype, 0) > rates.get("fp32", 0):
            bad.append(f"the Next names {said} on {out['trace'].get('device_name')}, where it is no faster than fp32")
    return bad


# --- 5. phases only where they are there -------------------------------------------------------------------

def _phases_only_where_they_change(out: dict, lines: list[str]) -> list[str]:
    text = " ".join(lines)
    if "TTFT" not in text:
        return []
    ph = out.get("phases") or {}
    decode = (ph.get("decode") or {}).get("count", 0)
    bad = []
    if not ph or decode < 2:
        bad.append(f"a line speaks of prefill and decode (TTFT) but the trace has {decode} decode steps")
    if ph.get("ttft_us", 0) > out.get("span_us", 0) and "before the first kernel" not in text:
        bad.append("the TTFT is longer than the GPU span, and no word says host time before the first kernel "
                   "is counted")
    return bad


# --- 6. one peak per trace -----------------------------------------------------------------------------------

def _one_peak(out: dict, lines: list[str]) -> list[str]:
    pk = out.get("peaks")
    if not pk:
        return []
    own = gbps(pk["bytes_per_s"] / 1e9)
    said = {m.group(1) or m.group(2) for line in lines for m in _GBPS_PEAK.finditer(line)}
    return [f"a line judges against {s}, the trace's peak is {own}" for s in sorted(said - {own})]


# --- 7. no number rounded to nothing --------------------------------------------------------------------------

def _no_number_rounded_to_nothing(lines: list[str]) -> list[str]:
    return [f"a number rounded to nothing: {m.group(0)!r} in {line[:60]!r}"
            for line in lines for m in _ROUNDED_TO_NOTHING.finditer(line)]
