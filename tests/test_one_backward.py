"""A backward per loss over a shared trunk (`for l in losses: l.backward(retain_graph=True)`) is found by its nodes
evaluated again with the same sequence number, and priced as one backward of the summed losses (fresh12
multitask_ranker_backward_per_task: three task losses through 12 embedding tables and a shared MLP, measured 0.52
of the step without the profiler after `sum(losses).backward()`). Hand-built: two steps of a ten-layer trunk and
three two-op towers, each layer's backward node launching a 100 µs kernel and its AccumulateGrad a 20 µs add."""
from __future__ import annotations

from kineto_factory import annotation, call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import ONE_BACKWARD

US = 1_000
NODE = "autograd::engine::evaluate_function: "
TRUNK, TOWERS = 10, 3


class _Timeline:
    def __init__(self):
        self.ev, self.t, self.k, self.gpu_t = [], 0, 1, 0

    def launch(self, name: str, seq: int | None, kernel_ns: int) -> None:
        """An op (an autograd node where seq is None or a node name is given) launching one kernel."""
        t, k = self.t, self.k
        args = {"Sequence number": seq} if seq is not None else {}
        self.ev.append(op(name, t, t + 20 * US, ext=k, **args))
        self.ev.append(call("cudaLaunchKernel", t + 8 * US, t + 14 * US, k, k))
        at = max(t + 16 * US, self.gpu_t + 1 * US)
        self.ev.append(gpu(f"kernel_{name[-12:]}", at, at + kernel_ns, k))
        self.gpu_t = at + kernel_ns
        self.t, self.k = t + 30 * US, k + 1


def _multitask(tmp_path, one_backward: bool = False):
    tl = _Timeline()
    seq = 1000
    for step in range(2):
        s0 = tl.t
        trunk = list(range(seq, seq + TRUNK))
        towers = [list(range(seq + TRUNK + 2 * i, seq + TRUNK + 2 * i + 2)) for i in range(TOWERS)]
        seq += TRUNK + 2 * TOWERS
        for n in trunk + [x for tw in towers for x in tw]:
            tl.launch("aten::addmm", n, 50 * US)
        passes = [[x for tw in towers for x in tw]] if one_backward else towers
        for tower in passes:            # a backward per loss: its tower, then the whole shared trunk again
            for n in reversed(tower):
                tl.launch(NODE + "AddmmBackward0", n, 100 * US)
            for n in reversed(trunk):
                tl.launch(NODE + "AddmmBackward0", n, 100 * US)
                tl.launch(NODE + "torch::autograd::AccumulateGrad", None, 20 * US)
        tl.t = max(tl.t, tl.gpu_t) + 50 * US
        tl.ev.append(annotation(f"ProfilerStep#{step}", s0, tl.t))
    return load(write(tmp_path / f"multitask_{one_backward}.json.gz", document(tl.ev)), use_cache=False)


def test_a_backward_per_loss_over_a_shared_trunk_is_priced_as_one_backward(tmp_path):
    lv = whatif.predict(_multitask(tmp_path), [ONE_BACKWARD]).lever(ONE_BACKWARD)
    a = lv.assumption
    assert (a.passes, a.nodes) == (TOWERS, 2 * TRUNK)              # the trunk's nodes, three times a step
    assert a.count == 2 * (TOWERS - 1) * 2 * TRUNK                  # two extra passes a step: node and accumulation
    assert a.accumulates == 2 * (TOWERS - 1) * TRUNK
    # the trunk's backward kernels (1.2 ms a pass of 1.55 ms a step's backward) go twice of three times
    assert 0.45 < lv.predicted_ratio < 0.7


def test_one_backward_of_the_summed_losses_is_not_found(tmp_path):
    lv = whatif.predict(_multitask(tmp_path, one_backward=True), [ONE_BACKWARD]).lever(ONE_BACKWARD)
    assert lv.assumption.count == 0 and lv.predicted_ratio == 1.0
