"""Where the Idle and Next lines point, they single out part of the step: a framework construct is not named where it
is around every launch ('inside nn.Module forwards: 48 launches in 3 calls' of a model's whole forward, heldout-user15
gh200_encoder, 48 of 48 launches; switch_moe, 482 of 482), and "in your code" names a call only where that call holds
most of the idle (leimao's MLP step: the model's call named for 12% of the launch idle). Hand-built launch-bound
loops."""
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


# --- the "in your code" pointer names a line only where its calls hold most of the idle --------------------------

def _step_of_three_calls(tmp_path, launches=(4, 4, 4)):
    """A launch-bound loop in `train` (train.py:10): each step calls the model, backward and the optimizer's step,
    each launching `launches[i]` 4 µs kernels 25 µs apart: the launch idle is spread over the three calls."""
    callees = ("nn.Module: Net_0", "torch/_tensor.py(570): backward", "torch/optim/optimizer.py(505): wrapper")
    ev, t, k = [], 0, 1
    for _ in range(STEPS):
        t0 = t
        for name, n in zip(callees, launches):
            c0 = t
            for _i in range(n):
                ev += [op("aten::add", t, t + 20 * US, ext=k), call("cudaLaunchKernel", t + 5 * US, t + 15 * US, k, k),
                       gpu("elementwise_kernel", t + 18 * US, t + 22 * US, k)]
                t, k = t + 25 * US, k + 1
            ev.append(claim_traces.python_frame(name, c0 - 1 * US, t - 2 * US, tid=kf.TID))
        ev.append(claim_traces.python_frame("train.py(10): train", t0 - 3 * US, t, tid=kf.TID))
        t += 10 * US
    return analyze_trace(load(write(tmp_path / "step.json", document(ev)), use_cache=False))


def test_idle_spread_over_the_steps_calls_names_no_line(tmp_path):
    # (leimao's MLP step: 'in your code: the `MLPModel(...)`' for 12% of the launch idle, optimizer.step's call 11%)
    a = _step_of_three_calls(tmp_path)
    assert a.source_lines is not None and a.source_lines.idle.get(a.dominant, ()) == ()
    assert not any("in your code" in line for line in five_lines(a))


def test_a_call_that_holds_most_of_the_idle_is_still_named(tmp_path):
    a = _step_of_three_calls(tmp_path, launches=(10, 1, 1))
    assert a.source_lines.idle[a.dominant][0].call == "Net"
