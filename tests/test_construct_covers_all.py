"""The Idle line names a framework construct only where it singles out part of the step: 'inside nn.Module forwards:
48 launches in 3 calls' said of a model's whole forward (heldout-user15 gh200_encoder, 48 of 48 launches; switch_moe,
482 of 482) says nothing. Hand-built traces: a launch-bound inference loop, each step one nn.Module forward."""
from __future__ import annotations

import claim_traces
import kineto_factory as kf
from kineto_factory import call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.voice.report import five_lines

US = 1_000
STEPS, LAUNCHES = 5, 12


def _loop(tmp_path, outside: int = 0):
    """STEPS steps, each a forward `nn.Module: Net_0` of LAUNCHES 4 µs kernels launched 25 µs apart, then `outside`
    more launches from the user's own code after the forward."""
    ev, t, k = [], 0, 1
    for _ in range(STEPS):
        t0 = t
        for i in range(LAUNCHES + outside):
            if i == LAUNCHES:
                ev.append(claim_traces.python_frame("nn.Module: Net_0", t0, t - 2 * US, tid=kf.TID))
            ev += [op("aten::add", t, t + 20 * US, ext=k), call("cudaLaunchKernel", t + 5 * US, t + 15 * US, k, k),
                   gpu("elementwise_kernel", t + 18 * US, t + 22 * US, k)]
            t, k = t + 25 * US, k + 1
        if not outside:
            ev.append(claim_traces.python_frame("nn.Module: Net_0", t0, t - 2 * US, tid=kf.TID))
        t += 10 * US
    return load(write(tmp_path / "loop.json", document(ev)), use_cache=False)


def test_a_forward_around_every_launch_is_not_named_as_where_the_idle_is(tmp_path):
    idle = five_lines(analyze_trace(_loop(tmp_path)))[2]
    assert idle.startswith("Idle: ") and "nn.Module forwards" not in idle


def test_a_forward_around_part_of_the_step_is_still_named(tmp_path):
    idle = five_lines(analyze_trace(_loop(tmp_path, outside=LAUNCHES)))[2]
    assert "inside nn.Module forwards: 60 launches in 5 calls" in idle
