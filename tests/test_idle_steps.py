"""The idle classifier's named steps, each on a small hand-built timeline with a known answer.

Times are ns from the trace start. A kernel is launched by a cpu_op holding a launch call
(kineto_factory.Launch); a sync is a cudaStreamSynchronize call on the same host thread.
"""
import numpy as np
import pytest

import kineto_factory as kf
from tracetriage.analyzers.analyses import idle
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.evidence import LaunchEvidence, SyncEvidence
from tracetriage.analyzers.model.verdicts import CAUSES, Cause

LAUNCH, HOST, SYNC, TRANSFER, OTHER = (CAUSES.index(c) for c in (
    Cause.LAUNCH_OVERHEAD, Cause.HOST_WORK, Cause.SYNCHRONIZATION, Cause.DATA_TRANSFER, Cause.OTHER))
US = 1_000


def trace_of(tmp_path, launches, extra=()):
    events = kf.events_for(launches) + [dict(e) for e in extra]
    return load(kf.write(tmp_path / "t.json", kf.document(events)), use_cache=False)


def sync_call(start_ns: int, end_ns: int, name: str = "cudaStreamSynchronize") -> dict:
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": kf.PID, "tid": kf.TID,
            "ts": round((kf.ORIGIN_NS + start_ns) / 1000, 3), "dur": round((end_ns - start_ns) / 1000, 3),
            "args": {"cbid": 131, "correlation": 900_000 + start_ns // US}}


def kernel(call_ns: int, gpu_ns: int, dur_ns: int = 10 * US, **kw) -> kf.Launch:
    """A launch whose call runs 4 µs from call_ns and whose kernel runs dur_ns from gpu_ns."""
    return kf.Launch(op_start=call_ns - 1 * US, op_end=call_ns + 5 * US, call_start=call_ns, call_end=call_ns + 4 * US,
                     gpu_start=gpu_ns, gpu_end=gpu_ns + dur_ns, **kw)


def gaps_of(tr):
    (d,) = idle.analyze(tr)
    return d, [(int(s) // US, int(e) // US, CAUSES[c]) for s, e, c in zip(d.gaps.start, d.gaps.end, d.gaps.cause)]


# --- step 1: free intervals ---------------------------------------------------------------------------

def test_free_intervals_are_where_no_kernel_runs_on_any_stream_and_copies_are_split_off(tmp_path):
    tr = trace_of(tmp_path, [
        kernel(0, 10 * US, 20 * US, stream=7),                          # 10..30 on stream 7
        kernel(5 * US, 20 * US, 20 * US, stream=8),                     # 20..40 on stream 8: overlaps
        kernel(40 * US, 50 * US, 10 * US, cat="gpu_memcpy", kernel="Memcpy HtoD (Pinned -> Device)"),  # 50..60
        kernel(60 * US, 70 * US, 10 * US),                              # 70..80
    ])
    acts = np.flatnonzero(np.isin(tr.ev.cat, idle.GPU_CATS))
    f = idle.free_intervals(tr, acts, None)
    as_us = lambda se: [(int(s) // US, int(e) // US) for s, e in zip(*se)]  # noqa: E731
    assert (f.lo // US, f.hi // US) == (kf.ORIGIN_NS // US + 10, kf.ORIGIN_NS // US + 80)
    rel = lambda se: [(s - kf.ORIGIN_NS // US, e - kf.ORIGIN_NS // US) for s, e in as_us(se)]  # noqa: E731
    assert rel(f.kernel) == [(10, 40), (70, 80)]
    assert rel(f.idle) == [(40, 70)]
    assert rel(f.transfer) == [(50, 60)]
    assert rel(f.free) == [(40, 50), (60, 70)]


# --- step 2: what follows each interval -----------------------------------------------------------------

def test_what_follows_names_the_next_activity_and_the_call_that_issued_it(tmp_path):
    tr = trace_of(tmp_path, [kernel(0, 10 * US), kernel(50 * US, 60 * US, kernel="void next<float>(float*)")])
    acts = np.flatnonzero(np.isin(tr.ev.cat, idle.GPU_CATS))
    f = idle.free_intervals(tr, acts, None)
    w = idle.what_follows(tr, acts, *f.free, idle._host_context(tr))
    (nxt,), (call,) = w.next_row, w.call
    assert tr.name_of(nxt) == "void next<float>(float*)"
    assert tr.name_of(call) == "cudaLaunchKernel" and tr.launch_of[nxt] == call
    assert w.call_start[0] - f.free[0][0] == 30 * US      # issued 30 µs after the device went idle
    assert not w.in_sync[0] and not w.call_is_copy[0]


# --- step 3: one rule per cause -------------------------------------------------------------------------

def test_work_issued_before_the_drain_is_device_side_launch_latency(tmp_path):
    # both calls made up front; the second kernel starts 3 µs after the first ends: queued, launch overhead
    d, gaps = gaps_of(trace_of(tmp_path, [kernel(0, 10 * US), kernel(6 * US, 23 * US)]))
    assert gaps == [(kf.ORIGIN_NS // US + 20, kf.ORIGIN_NS // US + 23, Cause.LAUNCH_OVERHEAD)]
    ev = d.evidence[Cause.LAUNCH_OVERHEAD]
    assert isinstance(ev, LaunchEvidence) and ev.queued_gaps == 1 and ev.gaps == 1


def test_a_short_host_stretch_before_a_launch_is_launch_overhead(tmp_path):
    # the host issues the next launch 20 µs after the device drained: well under 10 launch calls (40 µs) or 50 µs
    d, gaps = gaps_of(trace_of(tmp_path, [kernel(0, 10 * US), kernel(40 * US, 45 * US)]))
    assert [c for _, _, c in gaps] == [Cause.LAUNCH_OVERHEAD]
    assert d.by_cause_ns[Cause.LAUNCH_OVERHEAD] == 25 * US


def test_a_long_untraced_host_stretch_is_host_work_and_the_launch_call_stays_launch(tmp_path):
    # the device drains at 20 µs, the host is silent until the call at 520 µs, the kernel starts at 525 µs
    d, gaps = gaps_of(trace_of(tmp_path, [kernel(0, 10 * US), kernel(520 * US, 525 * US)]))
    o = kf.ORIGIN_NS // US
    assert gaps == [(o + 20, o + 520, Cause.HOST_WORK), (o + 520, o + 525, Cause.LAUNCH_OVERHEAD)]


def test_a_drain_while_the_host_waits_in_a_sync_is_synchronization_until_new_work_arrives(tmp_path):
    # kernel 0..100 µs queued; host syncs from 10 to 101 µs, then launches at 110: drain 100..115
    tr = trace_of(tmp_path, [kernel(0, 0, 100 * US), kernel(110 * US, 115 * US)], [sync_call(10 * US, 101 * US)])
    d, gaps = gaps_of(tr)
    o = kf.ORIGIN_NS // US
    assert gaps == [(o + 100, o + 115, Cause.SYNCHRONIZATION)]
    ev = d.evidence[Cause.SYNCHRONIZATION]
    assert isinstance(ev, SyncEvidence) and [c.name for c in ev.sync_calls] == ["cudaStreamSynchronize"]


def test_a_next_kernel_with_no_launch_call_is_other(tmp_path):
    first, second = kernel(0, 0), kernel(40 * US, 60 * US)
    events = kf.events_for([first]) + [e for e in kf.events_for([second], first_id=50)
                                       if e["cat"] == "kernel"]          # its call and op were not recorded
    tr = load(kf.write(tmp_path / "t.json", kf.document(events)), use_cache=False)
    _, gaps = gaps_of(tr)
    assert [c for _, _, c in gaps] == [Cause.OTHER]


def test_a_copy_running_while_no_kernel_does_is_data_transfer(tmp_path):
    tr = trace_of(tmp_path, [kernel(0, 0), kernel(2 * US, 10 * US, 30 * US, cat="gpu_memcpy",
                                                   kernel="Memcpy HtoD (Pinned -> Device)"), kernel(4 * US, 40 * US)])
    _, gaps = gaps_of(tr)
    o = kf.ORIGIN_NS // US
    assert gaps == [(o + 10, o + 40, Cause.DATA_TRANSFER)]


# --- step 4: splitting ----------------------------------------------------------------------------------

def test_a_sync_followed_by_long_host_work_splits_where_the_sync_returns(tmp_path):
    # drain at 100 µs, the sync returns at 101, the host then computes for 600 µs before launching
    tr = trace_of(tmp_path, [kernel(0, 0, 100 * US), kernel(700 * US, 705 * US)], [sync_call(10 * US, 101 * US)])
    _, gaps = gaps_of(tr)
    o = kf.ORIGIN_NS // US
    assert gaps == [(o + 100, o + 101, Cause.SYNCHRONIZATION), (o + 101, o + 700, Cause.HOST_WORK),
                    (o + 700, o + 705, Cause.LAUNCH_OVERHEAD)]


def test_the_recovery_after_a_sync_is_charged_to_the_sync_up_to_the_lead_the_host_lost():
    us = lambda *x: np.array(x) * US  # noqa: E731
    # a drain at 100 µs after a sync that began at 10 µs: the host lost a 90 µs lead. Then two gaps
    # while the host catches up, each ended by a launch call made after the gap began (host-issued).
    g = idle.Gaps(device=np.zeros(3, np.int32), start=us(100, 200, 300), end=us(150, 230, 400),
                  cause=np.array([SYNC, LAUNCH, LAUNCH], np.int8), next_row=np.full(3, -1), host_row=np.arange(3))

    class Tr:  # host rows 0..2: the sync, then the two launch calls
        class ev:
            start = us(10, 210, 310)

    out = idle.charge_sync_recovery(Tr, g)
    assert list(out.cause) == [SYNC, SYNC, LAUNCH]      # 30 µs fits in the 90 µs lead, the next 100 µs does not
    assert list(out.host_row) == [0, 0, 2]              # charged to the sync that lost the lead
    assert list(g.cause) == [SYNC, LAUNCH, LAUNCH]      # the input is left as it was


def test_adjacent_pieces_of_one_cause_merge_into_one_gap():
    ns = np.array
    g = idle.Gaps(device=ns([0, 0, 0], np.int32), start=ns([0, 10, 20]), end=ns([10, 20, 30]),
                  cause=ns([LAUNCH, LAUNCH, HOST], np.int8), next_row=ns([1, 2, 3]), host_row=ns([4, 5, 6]))
    m = idle.merge_adjacent(g)
    assert list(zip(m.start, m.end, m.cause)) == [(0, 20, LAUNCH), (20, 30, HOST)]
    assert list(m.next_row) == [2, 3] and list(m.host_row) == [4, 6]


# --- step 5: evidence -----------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [3, 8])
def test_launch_evidence_counts_gaps_and_takes_their_median(tmp_path, n):
    d, _ = gaps_of(trace_of(tmp_path, kf.chain(n, gap_ns=20 * US, kernel_ns=10 * US)))
    ev = d.evidence[Cause.LAUNCH_OVERHEAD]
    assert ev.gaps == n - 1 and ev.median_gap_us == pytest.approx(20.0) and ev.kernels == n
    assert ev.kernel_median_us == pytest.approx(10.0)
    assert [o.name for o in ev.launching_ops] == ["aten::add"]
    assert all(d.evidence[c].gaps == 0 for c in CAUSES if c is not Cause.LAUNCH_OVERHEAD)
