"""A first op call before the GPU span's first kernel (cuDNN's set-up in a first convolution, no long runtime call
inside it) is named in the set-up caveat, and the caveat's share is the warm-up replay's of the traced span where it
takes out more than the span's gaps hold (heldout-user18 resnet50inf_t4: a 4.30 ms first aten::conv2d, later calls
0.1-0.2 ms, missed; "7% of the span" where the warm-up prices 24% of the traced span). Hand-built."""
from __future__ import annotations

from kineto_factory import call, document, gpu, op, write
from tracetriage.analyzers.analyses.first_ops_before import first_ops_before
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.trace import KERNEL
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.voice.report import analysis_caveats

US, MS = 1_000, 1_000_000


def _cold_conv(tmp_path, rounds: int = 2):
    """aten::conv2d's first call holds the host 5 ms before its launch (nested aten::convolution the same), then three
    warm conv2d calls of 100 µs; then aten::addmm's first call holds 3 ms in a gap, then `rounds` of a warm addmm
    and a warm conv2d, each kernel 300 µs."""
    ev, t, k = [], 0, 1
    for name, host_ns in [("aten::conv2d", 5 * MS)] + [("aten::conv2d", 100 * US)] * 3 \
            + [("aten::addmm", 3 * MS)] + [("aten::addmm", 50 * US), ("aten::conv2d", 30 * US)] * rounds:
        end = t + host_ns
        ev.append(op(name, t, end + 5 * US, ext=k))
        if name == "aten::conv2d":
            ev.append(op("aten::convolution", t + 1 * US, end + 4 * US, ext=k))
        ev.append(call("cudaLaunchKernel", end - 8 * US, end, k, k))
        ev.append(gpu(f"{name[6:]}_kernel", end + 5 * US, end + 305 * US, k))
        t, k = end + 320 * US, k + 1
    return write(tmp_path / "cold_conv.json.gz", document(ev))


def test_a_first_op_call_before_the_first_kernel_is_found_outermost(tmp_path):
    t = load(_cold_conv(tmp_path), use_cache=False)
    found = first_ops_before(t, int(t.ev.start[t.ev.cat == KERNEL].min()))
    assert [w.name for w in found] == ["aten::conv2d"]
    assert found[0].first_call_us == 5005.0 and found[0].later_median_us == 105.0


def test_the_caveat_names_it_and_counts_the_warm_ups_share_of_the_traced_span(tmp_path):
    # (40 warm rounds: the warm-up takes out 22% of the traced span, under the share that makes it the Next, while the
    # span's one gap of set-up, the addmm's, is 9% of the GPU span)
    a = analyze_trace(load(_cold_conv(tmp_path, rounds=40), use_cache=False))
    assert a.next_experiment.kind is not Experiment.WARM_UP
    caveat = next(c for c in analysis_caveats(a) if "one-time set-up" in c)
    assert caveat.startswith("the profile includes one-time set-up: first calls of aten::conv2d 5.00 ms (later 35.0 "
                             "µs), aten::addmm 3.00 ms (later 55.0 µs), 22% of the traced span (host and GPU)")
