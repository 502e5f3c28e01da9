"""Exposed communication: collectives with no compute beside them, split into waiting for a peer and moving
bytes; the communication-bound regime and its Next; the overlap_comm lever; the ranks' peer waits."""
from pathlib import Path

import numpy as np
import pytest

from tests.kineto_factory import annotation, call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.dtypes import normalise_dtype
from tracetriage.analyzers.model.kernels import bus_factor, collective_kind
from tracetriage.analyzers.model.verdicts import Experiment, Regime
from tracetriage.analyzers.output import serialize
from tracetriage.analyzers.triage.diff import check_prediction
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.report import five_lines
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import LEVERS

TRACES = Path(__file__).resolve().parent.parent / "traces"
US, MS = 1_000, 1_000_000
AR = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
MM = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
GRAD = 64 << 20                   # 64M bf16 elements: a 128 MiB gradient


def kernels(spec, *, queued: bool = True, steps=None) -> list[dict]:
    """(kind, start, end[, stream[, nelems]]) per kernel, kind "mm" (a bf16 4096^3 matmul's op) or "ar" (an
    all-reduce over 2 ranks, its message on the kernel as Kineto writes it). Launch calls are queued up front
    (the device is the bottleneck) unless queued=False; `steps` adds ProfilerStep#N ranges."""
    ev = []
    for i, k in enumerate(spec):
        kind, start, end = k[:3]
        stream = k[3] if len(k) > 3 else 7
        nelems = k[4] if len(k) > 4 else GRAD
        t = 10 * US * i if queued else start - 20 * US
        ext, corr = 1 + i, 1000 + i
        if kind == "mm":
            ev.append(op("aten::mm", t, t + 8 * US, ext, dims=[[4096, 4096], [4096, 4096]],
                         types=["c10::BFloat16", "c10::BFloat16"]))
            ev.append(call("cudaLaunchKernel", t + 2 * US, t + 6 * US, corr, ext))
            ev.append(gpu(MM, start, end, corr, stream=stream))
        else:
            ev.append(op("record_param_comms", t, t + 8 * US, ext, dims=[[[nelems]]], types=["TensorList"]))
            ev.append(call("cuLaunchKernelEx", t + 2 * US, t + 6 * US, corr, ext))
            ev.append(gpu(AR, start, end, corr, stream=stream, **{
                "Collective name": "allreduce", "In msg nelems": nelems, "Out msg nelems": nelems,
                "Group size": 2, "dtype": "BFloat16"}))
    for n, (s, e) in enumerate(steps or ()):
        ev.append(annotation(f"ProfilerStep#{n}", s, e))
    return ev


def trace_of(tmp_path, name, spec, **kw) -> Path:
    return write(tmp_path / name, document(kernels(spec, **kw), rank=0))


def test_a_trace_mostly_in_collectives_is_communication_bound_not_memory_bound(tmp_path):
    """FINDINGS class d: 9 all-reduces hold 90% of the kernel time, one matmul the rest."""
    spec = [("mm", 0, 1 * MS)] + [("ar", (1 + i) * MS + 10 * US, (2 + i) * MS) for i in range(9)]
    a = analyze_file(trace_of(tmp_path, "d.json.gz", spec))
    assert a.verdict.regime is Regime.COMMUNICATION
    c = a.verdict.communication
    assert c.exposed_share == pytest.approx(0.9, abs=0.01) and c.bound
    assert serialize.report(a)["regime"] == "communication"
    assert five_lines(a)[3].startswith("Regime: communication-bound: collectives with no compute kernel beside "
                                       "them hold 90% of the kernel busy time")


def test_collectives_hidden_behind_compute_are_not_exposed(tmp_path):
    """An all-reduce on its own stream while matmuls run: its time costs the step nothing."""
    spec = [("mm", i * MS, (i + 1) * MS) for i in range(10)] + [("ar", 2 * MS, 7 * MS, 20)]
    a = analyze_file(trace_of(tmp_path, "o.json.gz", spec))
    c = a.verdict.communication
    assert c.collective_ns == 5 * MS and c.exposed_ns == 0
    assert a.verdict.regime is Regime.COMPUTE


def test_each_call_moves_bytes_as_fast_as_the_fastest_call_of_its_size_and_waits_the_rest(tmp_path):
    spec = [("ar", 0, 1 * MS), ("ar", 2 * MS, 3 * MS), ("ar", 4 * MS, 7 * MS), ("ar", 8 * MS, 13 * MS)]
    c = analyze_file(trace_of(tmp_path, "w.json.gz", spec)).verdict.communication
    assert (c.exposed_ns, c.transfer_ns, c.wait_ns) == (10 * MS, 4 * MS, 6 * MS)
    k = c.top
    assert k.kind == "AllReduce" and k.calls == 4 and k.message_bytes == 4 * GRAD * 2
    # 128 MiB in 1 ms over 2 ranks: bus factor 2 (2-1)/2 = 1, so 134 GB/s on a 450 GB/s NVLink 4
    assert k.bus_gbps == pytest.approx(GRAD * 2 / 1e6, rel=1e-3)
    assert k.link.name == "NVLink 4" and k.link_slow
    assert c.mostly_waiting


def test_a_call_with_no_bytes_to_move_is_waiting_for_as_long_as_a_bigger_call_would_not_explain(tmp_path):
    """The barrier before the profile's first step: an all-reduce of 0 elements that spins 50 ms."""
    spec = [("ar", 0, 50 * MS, 7, 0), ("ar", 51 * MS, 52 * MS)]
    c = analyze_file(trace_of(tmp_path, "b.json.gz", spec)).verdict.communication
    assert c.wait_ns == pytest.approx(49 * MS, abs=10 * US)


def test_a_rank_that_mostly_waits_for_its_peers_is_told_to_find_the_straggler(tmp_path):
    spec = [("mm", 0, 1 * MS)] + [("ar", (1 + 5 * i) * MS, (6 + 5 * i) * MS) for i in range(3)] + \
           [("ar", 16 * MS, 17 * MS)]
    a = analyze_file(trace_of(tmp_path, "s.json.gz", spec))
    assert a.next_experiment.kind is Experiment.FIND_STRAGGLER
    nxt = five_lines(a)[4]
    assert nxt.startswith("Next: find the rank the others wait for: report every rank's trace together")
    assert "12.0 ms of it is waiting for a peer to arrive" in nxt and "do less arithmetic" not in nxt


def test_a_rank_that_mostly_moves_bytes_is_told_to_overlap_with_the_predicted_saving(tmp_path):
    # matmul, all-reduce, matmul, all-reduce ... on one stream: nothing after an all-reduce reads it
    spec, t = [], 0
    for _ in range(4):
        spec += [("mm", t, t + 1 * MS), ("ar", t + 1 * MS, t + 3 * MS)]
        t += 3 * MS
    a = analyze_file(trace_of(tmp_path, "m.json.gz", spec))
    assert a.verdict.regime is Regime.COMMUNICATION and not a.verdict.communication.mostly_waiting
    nx = a.next_experiment
    assert nx.kind is Experiment.OVERLAP_COMM and nx.lever.lever == "overlap_comm"
    assert nx.lever.predicted_ratio < 0.85
    line = five_lines(a)[4]
    assert line.startswith("Next: overlap the collectives with the compute they do not depend on")
    assert "if the collectives ran beside the compute), because" in line


# --- the overlap_comm lever --------------------------------------------------------------------

def test_overlap_comm_runs_each_collective_beside_the_compute_after_it(tmp_path):
    spec = [("mm", 0, 2 * MS), ("ar", 2 * MS, 4 * MS), ("mm", 4 * MS, 6 * MS), ("ar", 6 * MS, 8 * MS)]
    w = whatif.predict(load(trace_of(tmp_path, "l.json.gz", spec)), ["overlap_comm"])
    p = w.levers[0]
    assert p.assumption.count == 2 and p.assumption.consumers == "none"
    # the second matmul no longer waits for the first all-reduce: 2 + 2 + 2 (the last all-reduce) = 6 of 8 ms
    assert p.predicted_ns == pytest.approx(w.baseline_ns - 2 * MS, abs=50 * US)


def test_overlap_comm_keeps_the_next_step_waiting_for_the_collectives_it_reads(tmp_path):
    """With profiler steps, the next step's first kernel reads what the step's all-reduce made: nothing to win."""
    spec = [("mm", 0, 2 * MS), ("ar", 2 * MS, 4 * MS), ("mm", 4 * MS, 6 * MS), ("ar", 6 * MS, 8 * MS)]
    steps = [(0, 15 * US), (15 * US, 40 * US)]   # the host issues step 2's launches from 15 µs on
    w = whatif.predict(load(trace_of(tmp_path, "p.json.gz", spec, steps=steps)), ["overlap_comm"])
    p = w.levers[0]
    assert p.assumption.consumers == "steps"
    assert p.predicted_ns == pytest.approx(w.baseline_ns, abs=50 * US)


def test_collectives_already_on_their_own_stream_leave_overlap_comm_out_of_the_report(tmp_path):
    spec = [("mm", i * MS, (i + 1) * MS) for i in range(4)] + [("ar", 4 * MS, 9 * MS, 20)]
    a = analyze_file(trace_of(tmp_path, "own.json.gz", spec))
    p = a.levers.all.lever("overlap_comm")
    assert p.assumption.count == 0 and p.assumption.on_own_stream == 1
    assert "the 1 collectives already run on a stream of their own" in LEVERS["overlap_comm"].says(p.assumption)
    assert all(c.lever != "overlap_comm" for c in a.lever_choices)


def test_a_trace_without_collectives_never_names_overlap_comm():
    a = analyze_file(TRACES / "smell-sync-item.json.gz")
    assert a.verdict.communication is None
    assert all(c.lever != "overlap_comm" for c in a.lever_choices)
    assert "collectives" not in five_lines(a)[4]


def test_diff_recognises_collectives_moved_beside_the_compute(tmp_path):
    before = [("mm", 0, 2 * MS), ("ar", 2 * MS, 4 * MS), ("mm", 4 * MS, 6 * MS), ("ar", 6 * MS, 8 * MS)]
    after = [("mm", 0, 2 * MS), ("ar", 2 * MS, 4 * MS, 20), ("mm", 2 * MS, 4 * MS), ("ar", 4 * MS, 6 * MS, 20)]
    b = analyze_file(trace_of(tmp_path, "before.json.gz", before))
    a = analyze_file(trace_of(tmp_path, "after.json.gz", after))
    check = check_prediction(b, a)
    assert check is not None and check.lever == "overlap_comm" and check.evidence == "exposed_comm"


def test_only_overlap_comm_waits_for_two_gpu_ground_truth():
    """The one-GPU fix workloads measure every other lever; overlap_comm's pairs need a second rank."""
    assert {n for n, s in LEVERS.items() if s.ranks > 1} == {"overlap_comm"}


# --- names, factors, decoding ------------------------------------------------------------------

@pytest.mark.parametrize("kernel, kind", [
    (AR, "AllReduce"), ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*)", "SendRecv"),
    ("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "collective"),
    ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(...)", "AllReduce"),
    ("void deep_ep::intranode::dispatch<8>(...)", "AllToAll")])
def test_collective_kind_by_kernel_name(kernel, kind):
    assert collective_kind(kernel) == kind


def test_bus_factors_are_nccl_tests_ones():
    assert bus_factor("AllReduce", 8) == pytest.approx(1.75)
    assert bus_factor("AllGather", 8) == bus_factor("ReduceScatter", 8) == pytest.approx(0.875)
    assert bus_factor("SendRecv", None) == bus_factor("Broadcast", 4) == 1.0
    assert bus_factor("AllReduce", None) is None and bus_factor("collective", 8) is None


def test_a_collectives_message_and_group_are_read_from_its_kernel_and_its_op(tmp_path):
    tr = load(trace_of(tmp_path, "k.json.gz", [("ar", 0, 1 * MS)]), use_cache=False)
    k = np.flatnonzero(tr.ev.cat == 6)[0]
    assert (tr.ev.nbytes[k], tr.ev.group[k]) == (GRAD * 2, 2)
    assert normalise_dtype("Byte") == "uint8" and normalise_dtype("Char") == "int8"


# --- the bundled 2-rank H200 runs ----------------------------------------------------------------

def test_ddp_rank0_waits_for_its_straggler_peer_inside_the_all_reduces():
    a = analyze_file(TRACES / "ddp" / "rank0.json.gz")
    c = a.verdict.communication
    assert a.verdict.regime is Regime.COMMUNICATION and c.mostly_waiting
    assert c.wait_ns > 0.95 * c.exposed_ns
    assert a.next_experiment.kind is Experiment.FIND_STRAGGLER
    assert "do less arithmetic" not in five_lines(a)[4]


def test_ddp_skewed_rank0_moves_bytes_at_two_thirds_of_nvlink_and_could_overlap_them():
    a = analyze_file(TRACES / "ddp-skewed" / "rank0.json.gz")
    c = a.verdict.communication
    assert a.verdict.regime is Regime.COMMUNICATION and not c.mostly_waiting
    assert 250 < c.top.bus_gbps < 330 and c.top.link.gbps == 450.0      # 134 MB per call in ~0.46 ms
    assert a.next_experiment.kind is Experiment.OVERLAP_COMM
    assert 0.6 < a.next_experiment.lever.predicted_ratio < 0.97


def test_the_directory_report_measures_each_ranks_wait_against_the_fastest_rank():
    from tracetriage.analyzers.runs.pool import report_object

    rr = report_object(TRACES / "ddp")
    waits = {w.rank: w for w in rr.peer_waits}
    assert waits[1].wait_ns < 0.01 * waits[0].wait_ns          # rank 1 is the straggler: it waits for nobody
    assert waits[0].wait_ns > 600 * MS
    assert waits[0].transfer_ns == waits[1].transfer_ns


def test_seconds_of_exposed_collectives_split_into_wait_and_transfer_without_overflow(tmp_path):
    """The split of exposed time multiplies two ns totals: 10 s by 6 s is past int64 (a long run's profile)."""
    s = 1000 * MS
    spec = [("ar", 0, 1 * s), ("ar", 2 * s, 3 * s), ("ar", 4 * s, 7 * s), ("ar", 8 * s, 13 * s)]
    c = analyze_file(trace_of(tmp_path, "long.json.gz", spec)).verdict.communication
    assert (c.exposed_ns, c.transfer_ns, c.wait_ns) == (10 * s, 4 * s, 6 * s)


def test_the_rank_that_arrived_last_at_a_call_is_not_said_to_wait_for_a_peer_in_it(tmp_path):
    """ddp-skewed's pattern: rank 1 reaches the first all-reduce 400 ms before rank 0 (whose loop started late) and
    waits there; rank 0's own first call takes 0.64 ms against 0.46 ms later (a first call's set-up, not a peer).
    Alone, rank 0's trace read that as 180 µs "waiting for a peer (at least: against its own fastest call)", beside
    the run's 0 µs: both ranks said to wait in one call. Against every rank, only rank 1 (which arrived first)
    waits, and each rank's own report says the run's figure."""
    from tracetriage.analyzers.output import claims
    from tracetriage.analyzers.runs.pool import report_object

    run = tmp_path / "run"
    run.mkdir()
    t0 = 400 * MS
    firsts = {0: (t0, t0 + 640 * US), 1: (0, t0 + 640 * US)}
    for r in (0, 1):
        spec = [("ar", *firsts[r])] + [("ar", t0 + (1 + i) * MS, t0 + (1 + i) * MS + 460 * US) for i in range(4)]
        doc = document(kernels(spec, queued=False), rank=r)
        write(run / f"rank{r}.json.gz", doc)
    alone = analyze_file(run / "rank0.json.gz").verdict.communication
    assert alone.wait_ns == pytest.approx(180 * US, abs=5 * US) and not alone.against_peers
    rr = report_object(run)
    waits = {w.rank: w.wait_ns for w in rr.peer_waits}
    assert waits[0] == 0 and waits[1] == pytest.approx(t0, abs=1 * MS)
    out = serialize.ranks(rr)
    by_rank = {r["rank"]: r for r in out["ranks"]}
    comm0 = by_rank[0]["regime_detail"]["communication"]
    assert comm0["against_peers"] and comm0["wait_ns"] == 0
    assert "0 µs waiting for a peer (against the fastest rank's same call)" in by_rank[0]["lines"][3]
    assert "at least" not in " ".join(by_rank[0]["lines"] + by_rank[1]["lines"])
    assert claims.check_ranks(out) == []
    # a rank's report that keeps its own estimate beside the run's figures is caught
    by_rank[0]["regime_detail"]["communication"].update(against_peers=False, wait_ns=180_000)
    assert claims.check_ranks(out) == ["rank 0: its report measures its wait against its own calls, not the run's"]


def _unsized(spec, dims) -> list[dict]:
    """All-reduces as a trace with no message size on the kernel writes them; `dims[i]`: the launching op's Input
    Dims (None: record_shapes off)."""
    ev = []
    for i, (start, end) in enumerate(spec):
        ext, corr, t = 1 + i, 1000 + i, 10 * US * i
        ev.append(op("c10d::allreduce_", t, t + 8 * US, ext, **({"dims": [dims[i]], "types": ["Tensor"]}
                                                                 if dims[i] is not None else {})))
        ev.append(call("cuLaunchKernelEx", t + 2 * US, t + 6 * US, corr, ext))
        ev.append(gpu(AR, start, end, corr))
    return ev


def test_a_slow_call_that_may_move_more_bytes_is_not_said_to_wait_for_a_peer(tmp_path):
    """heldout-user18 llama4l_4090_r1: 10 all-gathers, no message size, no shapes; the full-vocab logits gather
    (4.2 GB, 441 ms at the link rate of the 3.3 ms per-layer ones) read '440.6 ms waiting for a peer (against its own
    fastest call)'. Without a size or the op's shapes no call is known to match another: the time stays unsplit."""
    spec = [(i * 5 * MS, i * 5 * MS + 1 * MS) for i in range(3)] + [(20 * MS, 60 * MS)]
    a = analyze_file(write(tmp_path / "u.json.gz", document(_unsized(spec, [None] * 4), rank=0)))
    c = a.verdict.communication
    assert c.wait_ns == 0 and c.top.unsplit_ns == c.top.exposed_ns == 43 * MS
    regime = five_lines(a)[3]
    assert "waiting for a peer (against" not in regime
    assert "not split into waiting for a peer and moving bytes" in regime
    assert "mostly moving bytes" not in " ".join(five_lines(a))


def test_calls_whose_ops_took_the_same_shapes_are_held_against_the_fastest_of_them(tmp_path):
    """With record_shapes the op's shapes say which calls move alike: the slow call of the same shape waited."""
    spec = [(i * 5 * MS, i * 5 * MS + 1 * MS) for i in range(3)] + [(20 * MS, 60 * MS)]
    same = _unsized(spec, [[4096, 4096]] * 4)
    c = analyze_file(write(tmp_path / "s.json.gz", document(same, rank=0))).verdict.communication
    assert c.top.unsplit_ns == 0 and c.top.wait_ns == 39 * MS
    other = _unsized(spec, [[4096, 4096]] * 3 + [[32000, 4096]])
    c = analyze_file(write(tmp_path / "o.json.gz", document(other, rank=0))).verdict.communication
    assert c.top.unsplit_ns == 0 and c.top.wait_ns == 0        # a lone call of its shape is all transfer


def test_the_measured_busy_share_says_how_much_of_it_is_collectives_waiting_for_a_peer(tmp_path):
    """heldout-user21 moeep_after rank 0: 'kernels busy 75% of it' where 74% of the span was all_to_all kernels
    spinning for a peer beside ~0.3 ms of GEMMs: the busy share read as work. Here 12 of the 16 ms wait."""
    spec = [("mm", 0, 1 * MS)] + [("ar", (1 + 5 * i) * MS, (6 + 5 * i) * MS) for i in range(3)] + \
           [("ar", 16 * MS, 17 * MS)]
    measured = five_lines(analyze_file(trace_of(tmp_path, "s.json.gz", spec)))[0]
    assert ("kernels busy 100% of it, 71% of the span collective kernels waiting for a peer (against its own fastest "
            "call), spinning, not working") in measured


def test_collectives_that_move_their_bytes_leave_the_busy_share_unqualified():
    measured = five_lines(analyze_file(TRACES / "ddp-skewed" / "rank0.json.gz"))[0]
    assert "waiting for a peer" not in measured


def test_a_diff_whose_kernel_time_grew_in_collectives_waiting_says_it_is_a_later_peer_not_more_work(tmp_path):
    """heldout-user21 moeep rank 0 before → after: 'kernel busy time grew by 10.5 ms' explained the change as kernel
    time, where the all_to_alls waited 12.9 ms longer for the other rank: lateness, not work."""
    from tracetriage.analyzers.triage.diff import diff_files
    from tracetriage.analyzers.voice.diff import diff_lines

    def run(ars):     # a matmul, the all-reduces of 8 kB, a matmul, back to back
        spec, t = [("mm", 0, 1 * MS)], 2 * MS
        for dur in ars:
            spec.append(("ar", t, t + dur, 7, 4096))
            t += dur + 1 * MS
        return spec + [("mm", t, t + 1 * MS)]

    before = trace_of(tmp_path, "before.json.gz", run([MS // 10] * 4))
    after = trace_of(tmp_path, "after.json.gz", run([4 * MS] * 3 + [MS // 10]))
    line = next(x for x in diff_lines(diff_files(before, after)) if x.startswith("Explained"))
    assert line.startswith("Explained by kernel time: kernel busy time grew by 11.7 ms")
    assert "and the collective kernels' waiting for a peer grew by 11.7 ms: a peer arriving later, not more work" \
        in line


# every spelling the collective pattern takes, each form of an optional "_", in any case; and names that hold none
_COLLECTIVE_SPELLINGS = [AR, "rccl_allreduce", "void all_reduce<bf16>", "AllGather_RING", "reduce_scatter",
                         "REDUCESCATTER", "AllToAll", "all_toall", "allto_all", "all_to_all", "ncclSendRecv",
                         "nvshmemi_barrier",
                         "deep_ep::combine", "DeepEP::dispatch", "dpsk::ep::fused", "void internode::notify<8>()",
                         "intranode::dispatch", "cross_device_reduce_2stage", "multimem_all_reduce_kernel",
                         "one_shot_all_reduce", "Two_Shot_", "\u017fendrecv"]   # (the long s: re.I folds it to s)
_OTHER_NAMES = [MM, "aten::mm", "void at::native::vectorized_elementwise_kernel<4, float>()", "xinternode::f",
                "Memcpy HtoD (Pageable -> Device)", "cudaLaunchKernel", "ProfilerStep#3", "void gather_kernel<16>()"]


def test_a_name_is_a_collective_exactly_where_the_pattern_finds_one():
    from tracetriage.analyzers.model.kernels import COLLECTIVE_NAME, is_collective
    names = _COLLECTIVE_SPELLINGS + _OTHER_NAMES + [n for p in sorted(TRACES.glob("*.json.gz"))[:12]
                                                    for n in load(p).names]
    assert [is_collective(n) for n in names] == [COLLECTIVE_NAME.search(n) is not None for n in names]
    assert all(is_collective(n) for n in _COLLECTIVE_SPELLINGS)


def test_a_name_holding_no_collective_text_is_told_without_the_pattern(monkeypatch):
    # the pattern's fourteen alternatives tried at each character of a ~1,000-character templated kernel name cost ~35
    # µs a name, ~30 ms of the report's at 942k events; a substring test tells most names first
    from tracetriage.analyzers.model import kernels
    searched = []

    class Spy:
        def search(self, name):
            searched.append(name)
            return kernels.re.search("x", "")

    monkeypatch.setattr(kernels, "COLLECTIVE_NAME", Spy())
    plain = [n for n in _OTHER_NAMES if "gather" not in n and "node::" not in n]   # (no piece of a collective's text)
    assert [kernels.is_collective(n) for n in plain] == [False] * len(plain) and len(plain) == 6
    assert searched == []
