"""What the kernel-changing levers price, against what the fix did to the kernels (issue 33's fresh4 findings:
channels_last priced 13% for a 41% win, sdpa 36% for 52%): the NCHW batch-norm kernels channels_last turns into
their twins, and the work queued before the profiled window, which a lever acting through launches must change
alike."""
from pathlib import Path

import numpy as np

from kineto_factory import Launch, document, events_for, gpu, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif import replay as rp
from tracetriage.analyzers.whatif.levers import channels_last
from tracetriage.analyzers.whatif.levers.knob import mirror_queued, queued_counterparts
from tracetriage.analyzers.whatif.levers.spec import Context

FIXES = Path(__file__).resolve().parent.parent / "traces" / "fixes"
US = 1_000


def _kernel_ms(path: Path, test) -> float:
    t = load(path)
    k = np.flatnonzero([test(t.names[n]) for n in t.ev.name.tolist()])
    return float((t.ev.end[k] - t.ev.start[k]).sum()) / 1e6


def test_channels_last_prices_the_nchw_batch_norm_kernels_as_their_twins_measured():
    # dev pair (H200, eval ResNet-50): the twins ran 2.47 ms where the NCHW transform kernels ran 4.54 ms
    before = FIXES / "knobs" / "channels_last_resnet50--before.json.gz"
    a = whatif.predict(load(before), ["channels_last"]).lever("channels_last").assumption
    twins = _kernel_ms(FIXES / "knobs" / "channels_last_resnet50--channels_last.json.gz",
                       lambda n: "batch_norm" in n and "channels_last" in n)
    assert a.nchw_kernels == 212 and abs(a.twin_ns / 1e6 - twins) < 0.2 * twins, (a, twins)


def test_channels_last_prices_batch_norm_backward_kernels_no_op_charged_bytes_to():
    # dev pair (knobs3 cudnn_bench_deeplab, training): batch_norm_backward_kernel's op carries no byte count; its
    # bytes are five passes over the activation its op's shapes give
    t = load(FIXES / "knobs3" / "cudnn_bench_deeplab--before.json.gz")
    c = Context(t, dg.build(t))
    rows = channels_last.kernel_rows(c, channels_last.is_nchw_kernel)
    backward = [r for r in rows.tolist() if "batch_norm_backward_kernel<" in t.names[t.ev.name[c.g.g_row[r]]]]
    assert backward and c.kernel_bytes is not None and not c.kernel_bytes[c.g.g_row[backward]].any()
    plan = rp.Plan.of(c.g)
    sped, _ = channels_last._bn_twins(c, plan, rows)
    assert set(backward) <= set(sped.tolist())
    assert (plan.g_dur[backward] < c.g.g_dur[backward]).all()


def _queued_trace(tmp_path):
    """Ten kernels a step, three steps launched in the window, the last seven of a step before it queued (no launch
    call in the trace: launched before profiling started)."""
    names = [f"void k{i}<float>(float*)" for i in range(10)]
    ev, t = [], 0
    for i, n in enumerate(names[3:]):
        ev.append(gpu(n, t, t + 10 * US, 9000 + i))
        t += 11 * US
    launches = []
    for step in range(3):
        for n in names:
            launches.append(Launch(op_start=t, op_end=t + 3 * US, call_start=t + 1 * US, call_end=t + 2 * US,
                                   gpu_start=t + 5 * US, gpu_end=t + 15 * US, kernel=n))
            t += 16 * US
    return load(write(tmp_path / "queued.json", document(ev + events_for(launches))), use_cache=False)


def test_work_queued_before_the_window_is_changed_as_its_launched_twin_is(tmp_path, monkeypatch):
    monkeypatch.setattr("tracetriage.analyzers.whatif.levers.knob.MIRROR_MIN", 4)
    t = _queued_trace(tmp_path)
    g = dg.build(t)
    c = Context(t, g)
    queued, like = queued_counterparts(c)
    names = [t.names[n] for n in t.ev.name[g.g_row].tolist()]
    assert len(queued) == 7 and [names[i] for i in queued.tolist()] == [names[i] for i in like.tolist()]
    p = rp.Plan.of(g)
    k5 = [i for i, n in enumerate(names) if n.startswith("void k5<") and g.g_linked[i]]
    p.g_dur[k5] = 0                                    # a lever removed the launched k5s
    assert mirror_queued(c, p) == 1
    q5 = [i for i in queued.tolist() if names[i].startswith("void k5<")]
    assert p.g_dur[q5].tolist() == [0]
