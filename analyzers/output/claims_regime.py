"""Claim relations of the Regime line: a withheld verdict is given nowhere (3), the device can take the advice
(4), phases only where they change (5). tracetriage.analyzers.output.claims lists every relation and runs them."""
from __future__ import annotations

from tracetriage.analyzers.model.kernels import matrix_precision_by_name
from tracetriage.analyzers.output.claims_said import SHARE_TOLERANCE, Said

# --- 3. a withheld verdict is given nowhere --------------------------------------------------------------------

def _withheld(out: dict) -> set[str]:
    health = out.get("health") or {}
    return {v for f in health.get("findings", []) if f.get("shown") for v in f.get("withholds", [])}


def withheld_verdicts_not_given(said: Said, out: dict) -> list[str]:
    withheld = _withheld(out)
    bad = []
    split = said.under("regime.compute_share") + said.under("regime.memory_share")
    if "regime" in withheld and split:
        bad.append(f"the health check withholds the regime, yet a line says {split[0]['said']} "
                   f"{split[0]['key'].split('.')[1].replace('_share', '')}-bound")
    if "whatif" in withheld and any(c["key"].endswith("saving") for c in said.all):
        bad.append("the health check withholds the what-if, yet a line gives a prediction")
    return bad


_FP32_MATH_MAJORITY = 0.5   # tracetriage.analyzers.analyses.roofline.FP32_MATH_MAJORITY


def kernel_names_decide_the_arithmetic(said: Said, out: dict, lines: list[str]) -> list[str]:
    """Without shapes the kernels' names still say fp32 GEMMs and convolutions on CUDA cores: a span where they hold
    most of the kernel time is not told there is "nothing else to decide by", nor sent to capture again, where its
    device runs a half precision faster on tensor cores; a share of that time said is its field."""
    d = out.get("regime_detail") or {}
    voting = sum(d.get(k, 0.0) for k in ("compute_us", "memory_us", "unknown_us", "latency_us"))
    fp32 = d.get("fp32_cuda_core_us", 0.0)
    bad = []
    rates = ((out.get("peaks") or {}).get("limit_flops_per_s")) or {}
    faster = max(rates.get("fp16", 0), rates.get("bf16", 0)) > 2 * rates.get("fp32", float("inf"))
    if voting > 0 and fp32 >= _FP32_MATH_MAJORITY * voting:
        if "nothing else to decide by" in lines[3]:
            bad.append(f"the Regime line says nothing else decides, but {100 * fp32 / voting:.0f}% of kernel time is "
                       "fp32 GEMMs/convolutions on CUDA cores by their names")
        if faster and (out.get("next_experiment") or {}).get("kind") == "find_the_bound":
            bad.append("the Next looks for the bound of fp32 CUDA-core kernels on a device whose tensor cores run a "
                       "half precision faster (mixed precision helps whichever roof holds them)")
    nx = out.get("next_experiment") or {}
    ratio, span = nx.get("predicted_ratio"), out.get("span_us") or 0.0
    if faster and d.get("bound") == "fp32_cuda_cores" and voting > 0 and fp32 >= _FP32_MATH_MAJORITY * voting \
            and nx.get("whatif_lever") and ratio is not None and span:
        floor = 0.5 * (out.get("kernel_busy_us") or 0.0) / span * fp32 / voting
        if 1 - ratio < floor - SHARE_TOLERANCE:
            bad.append(f"the Next ({nx['whatif_lever']}) saves {100 * (1 - ratio):.0f}% where fp32 GEMMs/convolutions "
                       f"on CUDA cores would give back at least {100 * floor:.0f}% in a half precision")
    for key in ("regime.fp32_math_share", "next.because.fp32_math_share"):
        c = said.get(key)
        if c is not None and (not voting or abs(c["value"] - fp32 / voting) > SHARE_TOLERANCE):
            bad.append(f"a line says {c['said']} of kernel time is fp32 on CUDA cores, its field is "
                       f"{100 * fp32 / voting if voting else 0:.1f}%")
    return bad


# --- 4. the device can take the advice ------------------------------------------------------------------------

_FASTER_THAN = {"fp8": "fp16", "tf32": "fp32", "bf16": "fp32", "fp16": "fp32"}


def device_can_take_the_advice(said: Said, out: dict) -> list[str]:
    rates = ((out.get("peaks") or {}).get("limit_flops_per_s")) or {}
    device = out["trace"].get("device_name") or "a device"
    bad = []
    iters = [n for f in out.get("framework") or [] for n in f.get("names") or []]
    if said.get("next.asks.dataloader_workers") is not None and \
            any("_MultiProcessingDataLoaderIter" in n for n in iters):
        bad.append("the Next asks for DataLoader workers, but the trace's DataLoader already runs them")
    for c in said.under("next.precision.") + said.under("next.own.precision."):
        p = c["key"].rsplit(".", 1)[1]
        if not rates.get(p, 0) > rates.get(_FASTER_THAN[p], 0):
            bad.append(f"the Next names {c['said']} on {device}, where it is no faster than {_FASTER_THAN[p]}")
        held = _matrix_precision_of_top_kernels(out)
        if held is not None and _CHEAPNESS.get(p, 0) <= _CHEAPNESS.get(held, 0):
            bad.append(f"the Next names {c['said']} as cheaper arithmetic, but the top GEMMs/convolutions already run "
                       f"{held} by their names")
    return bad


_CHEAPNESS = {"fp32": 0, "tf32": 1, "bf16": 2, "fp16": 2, "fp8": 3}


def _matrix_precision_of_top_kernels(out: dict) -> str | None:
    """The precision holding most of the top kernels' GEMM/convolution time, read from the kernels' names (a graph
    replay's GEMMs carry no shapes, their names still say bf16: fresh4 mlp_gemm_roof-after was told "TF32 or
    bf16"), else None."""
    by: dict[str, float] = {}
    for k in out.get("top_kernels") or []:
        p = matrix_precision_by_name(k.get("name", ""))
        if p is not None:
            by[p] = by.get(p, 0.0) + k.get("device_us", 0.0)
    return max(by, key=by.get) if by else None


# --- 5. phases only where they are there -------------------------------------------------------------------

def phases_only_where_they_change(said: Said, out: dict) -> list[str]:
    ttft = said.get("measured.ttft_us")
    if ttft is None:
        return []
    decode = said.value("measured.decode_steps") or 0
    field = ((out.get("phases") or {}).get("decode") or {}).get("count", 0)
    bad = []
    if decode < 2 or field < 2:
        bad.append(f"a line speaks of prefill and decode (TTFT) but the trace has {int(min(decode, field))} "
                   "decode steps")
    if ttft["value"] > out.get("span_us", 0) and said.get("measured.ttft_counts_host") is None:
        bad.append("the TTFT is longer than the GPU span, and no word says host time before the first kernel "
                   "is counted")
    return bad
