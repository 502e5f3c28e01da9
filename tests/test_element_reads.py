"""A loop reading one tensor to the host element by element (`total += t[i].cpu()`) is priced whole by the sync
lever: one read of the tensor takes each iteration's indexing and copy ops, their calls and waits, not the waits alone
(heldout-user19 gp_d2h_sync: "removing the syncs predicts only −14%" of a loop holding 62% of the span, and the Next
led with CUDA graphs for the smaller add loop beside it, its code pointer there)."""
import kineto_factory as kf
from kineto_factory import call, document, gpu, op
from other_peoples_traces import US
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.whatif import predict as whatif

N = 4096


def _sums(reads: int = 64, adds: int = 64, shapes: bool = True) -> dict:
    """`first_sum`: `reads` times `total += t[i].cpu()` (aten::select, then aten::to's blocking 4-byte DtoH copy and
    its stream sync, then aten::add_ on the host value), 50 µs an iteration; then `second_sum`: `adds` times
    `total += t[i]` on the device (aten::select, aten::add_ launching a 2 µs kernel), 22 µs an iteration."""
    dims = {"dims": [[N], [], []], "types": ["float", "Scalar", "Scalar"]} if shapes else {}
    ev, t, ext, corr = [], 100 * US, 1, 1000
    for _ in range(reads):
        ev += [op("aten::select", t, t + 5 * US, **dims),
               op("aten::to", t + 8 * US, t + 38 * US, ext), op("aten::copy_", t + 12 * US, t + 35 * US, ext),
               call("cudaMemcpyAsync", t + 15 * US, t + 27 * US, corr, ext),
               gpu("Memcpy DtoH (Device -> Pageable)", t + 20 * US, t + 22 * US, corr, cat="gpu_memcpy", bytes=4),
               call("cudaStreamSynchronize", t + 28 * US, t + 30 * US, corr + 1, ext),
               op("aten::add_", t + 40 * US, t + 43 * US)]
        t, ext, corr = t + 50 * US, ext + 1, corr + 2
    for _ in range(adds):
        ev += [op("aten::select", t, t + 5 * US, **dims), op("aten::add_", t + 8 * US, t + 20 * US, ext),
               call("cudaLaunchKernel", t + 10 * US, t + 16 * US, corr, ext),
               gpu("void at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add>", t + 18 * US, t + 20 * US,
                   corr)]
        t, ext, corr = t + 22 * US, ext + 1, corr + 1
    ev.append(call("cudaDeviceSynchronize", t, t + 10 * US, corr))
    return document(ev)


def _levers(path):
    return {x.lever: x for x in whatif.predict(load(path), ["remove_syncs", "cuda_graphs"]).levers}


def test_a_loop_reading_elements_is_priced_whole_and_leads_the_next(tmp_path):
    path = kf.write(tmp_path / "t.json", _sums())
    levers = _levers(path)
    syncs = levers["remove_syncs"]
    assert syncs.assumption.element_reads == 64 and syncs.assumption.element_shape == (N,)
    # the read loop is 3.2 ms of a 4.6 ms span; its iterations past the first keep only the 3 µs host add_
    assert syncs.saving_ns >= 0.8 * 63 * (50 - 3) * US
    assert syncs.saving_ns > levers["cuda_graphs"].saving_ns
    out = serialize.report(analyze_file(path))
    assert out["next_experiment"]["whatif_lever"] == "remove_syncs"
    assert out["lines"][4].startswith(f"Next: read the [{N}] tensor once, not element by element (64 reads of one "
                                      "element each")
    assert claims.check(out) == []


def test_without_shapes_no_element_loop_is_read(tmp_path):
    # no input shapes: one tensor sliced cannot be told from several; the syncs are priced as syncs
    path = kf.write(tmp_path / "t.json", _sums(shapes=False))
    assert _levers(path)["remove_syncs"].assumption.element_reads == 0


def test_a_few_reads_are_no_loop(tmp_path):
    path = kf.write(tmp_path / "t.json", _sums(reads=5))
    assert _levers(path)["remove_syncs"].assumption.element_reads == 0


def test_a_loop_that_computes_what_it_reads_is_no_element_loop(tmp_path):
    # (traces/probe-sync-tolist: each iteration's GEMMs, then `x[0, :4].tolist()` for a log: the values read are new
    # each time, and no one read before the loop takes them)
    doc = _sums(adds=0)
    ev, t = doc["traceEvents"], 100 * US
    for i in range(64):    # a GEMM launched at the start of each iteration, before its select
        ev += [call("cudaLaunchKernel", t + 1 * US, t + 3 * US, 90_000 + i),
               gpu("ampere_sgemm_128x64_nn", t + 3 * US, t + 4 * US, 90_000 + i)]
        t += 50 * US
    path = kf.write(tmp_path / "t.json", doc)
    assert _levers(path)["remove_syncs"].assumption.element_reads == 0
