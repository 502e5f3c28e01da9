"""no_recompiles prices what compiling once takes away (issue 33, fresh3 compile_recompile: 0.011 of the span
predicted against 0.0009 measured). Two things compilation leaves outside dynamo/Inductor's compile spans went
uncounted: autotuning's benchmark launches (inside a compile span, their kernels went but each call kept a launch's
cost: 5,035 calls, 60 ms of the 62.8 ms predicted), and the first call of freshly compiled code (its new kernels'
module loading and launcher set-up: 0.3-1.3 ms before each new kernel's first launch, 5.2 ms after the last)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kineto_factory import annotation, call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.whatif import predict as whatif

REALWORLD = Path(__file__).resolve().parent.parent / "traces" / "realworld"
US = 1_000


def _compiled_step(first_call_ns: int, benchmarks: int) -> dict:
    """One step: dynamo compiles (1 ms), then the compiled region runs; inside it Inductor autotunes (`benchmarks`
    launches of 20 µs kernels, 10 µs a call, inside CachingAutotuner.benchmark_all_configs), then launches its 3
    kernels, the first only after `first_call_ns` of untraced host time (its module loading)."""
    ev, corr, t = [], 1, 0
    ev.append(op("dynamo", t, t + 1000 * US))
    ev.append(op("entire_frame_compile", t + 10 * US, t + 990 * US))
    t = 1000 * US
    region_start = t
    ev.append(op("CachingAutotuner.benchmark_all_configs (dynamo_timed)", t, t + benchmarks * 30 * US + 10 * US))
    for _ in range(benchmarks):
        ev.append(call("cudaLaunchKernel", t + 5 * US, t + 15 * US, corr))
        ev.append(gpu("triton_poi_fused_add_0", t + 20 * US, t + 40 * US, corr))
        corr, t = corr + 1, t + 30 * US
    t += 10 * US + first_call_ns
    for i in range(3):
        ev.append(call("cuLaunchKernel", t, t + 10 * US, corr))
        ev.append(gpu(f"triton_poi_fused_mul_{i}", t + 15 * US, t + 25 * US, corr))
        corr, t = corr + 1, t + 20 * US
    ev.append(op("Torch-Compiled Region: 0/1", region_start - 5 * US, t + 5 * US))
    ev.append(annotation("ProfilerStep#1", 0, t + 50 * US))
    return document(ev)


def _no_recompiles(path: Path):
    lv = whatif.predict(load(path), ["no_recompiles"]).levers[0]
    return lv.predicted_ns, lv.assumption


def test_autotuning_launches_go_whole_with_the_compile_not_at_a_launch_each(tmp_path):
    few, _ = _no_recompiles(write(tmp_path / "few.json", _compiled_step(0, 10)))
    many, a = _no_recompiles(write(tmp_path / "many.json", _compiled_step(0, 400)))
    assert a.count >= 1 and a.gpu_ops_gone == 400
    assert abs(many - few) <= 20 * US          # 390 more benchmark launches cost nothing once compiled


def test_the_first_call_of_freshly_compiled_code_loses_its_module_loading(tmp_path):
    warm, _ = _no_recompiles(write(tmp_path / "warm.json", _compiled_step(0, 10)))
    cold, _ = _no_recompiles(write(tmp_path / "cold.json", _compiled_step(5_000 * US, 10)))
    assert abs(cold - warm) <= 20 * US         # the 5 ms before the first new kernel's launch does not recur
    assert warm <= 200 * US                    # three launches and their kernels stay


RECOMPILE_PAIRS = ("recompile", "recompile_batch", "recompile_gpt2")   # all three on the test half (sha256 rule)


@pytest.mark.parametrize("kind", RECOMPILE_PAIRS)
def test_compiling_once_lands_within_about_twice_the_measured_ratio_on_the_realworld_recompile_pairs(kind):
    """Measured on an H200 (traces/realworld/measured.json, unprofiled medians 0.0055-0.0075); before this model
    the predictions were 0.0229, 0.0245 and 0.0099 (1.3-4.2x off); now 0.0115, 0.0121, 0.0051."""
    measured = json.loads((REALWORLD / "measured.json").read_text())["scenarios"][kind]["ratio"]["no_recompiles"]
    lv = whatif.predict(load(REALWORLD / f"{kind}--before.json.gz"), ["no_recompiles"]).levers[0]
    off = max(lv.predicted_ratio / measured["median"], measured["median"] / lv.predicted_ratio)
    assert off <= 2.2, (lv.predicted_ratio, measured["median"])
