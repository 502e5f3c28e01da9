"""A training step that replays CUDA graphs for its model (torch.cuda.make_graphed_callables) between an eager input
copy, loss and optimizer step: the engineer's knob is one graph of the whole step, and the cuda_graphs lever prices
it by taking the replays into the step's graph with the launches around them (public trace_with_make_graphed_callables
was told to take host work off the critical path; its whole-step torch.cuda.graph measured 1.33 -> 0.90 ms a step)."""
from __future__ import annotations

from pathlib import Path

from tests.kineto_factory import annotation, call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.evidence import LaunchEvidence
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.voice.common import advice
from tracetriage.analyzers.whatif import predict as whatif

MID_OPS_GRAPHS = Path(__file__).resolve().parent.parent / "traces" / "fixes" / "mid_ops--cuda_graphs.json.gz"
US = 1_000
STEPS = 6
GRAPH_KERNELS = 10


def _graphed_model_step(tmp_path):
    """Each step: the input copied in (one copy), the model's graph replayed (10 kernels of 20 µs), the loss (two
    ops, one kernel each) and the optimizer's one foreach kernel, each apart by 40 µs of the step's Python (shorter
    than host work counts here): after the replay the device idles between them."""
    ev, corr, ext, t = [], 1, 1, 100 * US

    busy = 0                                         # the stream's last end

    def eager(name: str, kernel: str, at: int, cat: str = "kernel") -> int:
        nonlocal corr, ext, busy
        ev.append(op(name, at, at + 20 * US, ext))
        ev.append(call("cudaMemcpyAsync" if cat == "gpu_memcpy" else "cudaLaunchKernel", at + 5 * US, at + 12 * US,
                       corr=corr, ext=ext))
        k0 = max(at + 15 * US, busy)
        ev.append(gpu(kernel, k0, k0 + 3 * US, corr, cat=cat))
        corr, ext, busy = corr + 1, ext + 1, k0 + 3 * US
        return at + 20 * US

    for s in range(STEPS):
        start = t
        t = eager("aten::copy_", "Memcpy DtoD (Device -> Device)", t, "gpu_memcpy") + 40 * US
        ev.append(op("Graphed", t, t + 30 * US, ext))
        ev.append(call("cudaGraphLaunch", t + 5 * US, t + 25 * US, corr=corr, ext=ext))
        for k in range(GRAPH_KERNELS):
            ks = max(t + 30 * US, busy)
            ev.append(gpu("void model_kernel<float>(float*)", ks, ks + 20 * US, corr))
            busy = ks + 20 * US
        corr, ext = corr + 1, ext + 1
        t += 40 * US
        t = eager("aten::mse_loss", "void mse_kernel<float>(float*)", t) + 10 * US   # queued behind the replay
        t = eager("aten::mean", "void reduce_kernel<float>(float*)", t) + 40 * US
        opt = t
        t = eager("aten::_foreach_add_", "void multi_tensor_apply_kernel<float>(float*)", t + 10 * US)
        ev.append(annotation("Optimizer.step#SGD.step", opt, t))
        t += 40 * US
        ev.append(annotation(f"ProfilerStep#{s}", start - 5 * US, t - 5 * US))
    return write(tmp_path / "graphed_model_step.json", document(ev))


def test_graph_replays_between_eager_launches_go_into_the_steps_graph(tmp_path):
    w = whatif.predict(load(_graphed_model_step(tmp_path)), ["cuda_graphs"])
    lv = w.lever("cuda_graphs")
    # every eager launch of a step joins the step's graph, with the replay among them
    assert lv.assumption.replays == STEPS
    assert lv.assumption.count == 4 * STEPS
    # the launches and the Python between them go: a tenth of the span at the least
    assert lv.saving_ns > 0.10 * w.baseline_ns


def test_a_step_of_graph_replays_alone_stays_as_it_is(tmp_path):
    """Nothing outside the graphs: the lever takes no replay in (mid_ops--cuda_graphs keeps its prediction of 0)."""
    w = whatif.predict(load(MID_OPS_GRAPHS), ["cuda_graphs"])
    lv = w.lever("cuda_graphs")
    assert lv.assumption.count == 0 and lv.assumption.replays == 0
    assert lv.predicted_ns == w.baseline_ns


def _launch_evidence(graph_launches: int, graphed: int, kernels: int) -> LaunchEvidence:
    return LaunchEvidence(Cause.LAUNCH_OVERHEAD, gaps=100, total_us=1000.0, median_gap_us=10.0, max_gap_us=50.0,
                          next_kernel_median_us=4.0, launch_call_median_us=8.0, queued_gaps=0, launching_ops=(),
                          kernels=kernels, kernel_median_us=4.0, graph_launches=graph_launches,
                          graphed_kernels=graphed)


def test_launches_left_outside_a_training_steps_graphs_ask_for_the_whole_step_in_one_graph():
    ev = _launch_evidence(14, 196, 254)
    said = advice(Cause.LAUNCH_OVERHEAD, ev, trains=True)
    assert "capture the whole training step (forward, loss, loss.backward() and optimizer.step()) in one " \
           "torch.cuda.graph" in said
    # an inference loop's graphs: capture more of the step, no backward or optimizer named
    said = advice(Cause.LAUNCH_OVERHEAD, ev)
    assert "capture more of the step in the graph" in said and "optimizer" not in said
