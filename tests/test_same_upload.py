"""The same host-to-device upload every profiled step (one shape and dtype, the same count a step: a lookup table
moved each step, `table.to(device)` inside the loop) leads the copies' Next with "keep it on the device (move it once,
register it as a buffer)", pinning only after it; a DataLoader's batches (new data of one shape each step) or uploads
whose shapes change keep the copies' own words."""
from kineto_factory import annotation, op
from test_host_blocking_steps import NODE, Host
from tracetriage.analyzers.analyses.copies_async import copies_async
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace

TABLE = 8_388_608


def _step(h: Host, n: int, pinned: bool = False, gradient: bool = False) -> None:
    """The table's upload (aten::to of [n] int64, 6 ms of a pageable copy), then the model's kernels; `gradient`:
    the upload made by autograd's ToCopyBackward0 (a host loss's gradient going back to the device)."""
    s = h.t
    h.copy_op("HtoD", [[n]], dur=6_200_000, copy_ns=6_000_000)
    if gradient:
        h.ev.append(op(NODE + "ToCopyBackward0", s - 500, h.t - 500, None))
    to = next(e for e in reversed(h.ev) if e["name"] == "aten::to")
    to["args"]["Input type"] = ["long int"]
    copy = next(e for e in reversed(h.ev) if e.get("cat") == "gpu_memcpy")
    copy["args"]["bytes"] = n * 8
    if pinned:      # a staging buffer for new data each step (DataLoader(pin_memory=True), a prefetcher)
        copy["name"] = "Memcpy HtoD (Pinned -> Device)"
    for _ in range(40):
        h.kernel_op("aten::addmm", [[4096, 512], [512, 512]], dur=150_000)


def _trace(tmp_path, sizes, loader: bool = False, pinned: bool = False, gradient: bool = False):
    h = Host(kernel_ns=140_000)
    for n in sizes:
        start = h.t
        h.step(lambda: _step(h, n, pinned, gradient))
        if loader:
            h.ev.append(annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", start - 500,
                                   start + 100))
    return h.trace(tmp_path, f"t{len(sizes)}{loader}{pinned}{gradient}{sizes[-1]}.json.gz")


def test_the_same_upload_every_step_is_told_keep_it_on_the_device_first(tmp_path):
    tr = _trace(tmp_path, [TABLE] * 3)
    u = copies_async(tr).same_upload
    assert u is not None and (u.shape, u.per_step, u.steps, u.nbytes) == (f"[{TABLE}] int64", 1, 3, TABLE * 8)
    out = serialize.report(analyze_trace(tr))
    nxt = out["lines"][4]
    assert nxt.startswith(f"Next: keep the [{TABLE}] int64 tensor on the device")
    assert "register_buffer" in nxt and nxt.index("register_buffer") < nxt.index("pin host memory")
    assert claims.check(out) == []


def test_a_dataloaders_batches_changing_shapes_a_pinned_source_or_a_gradient_are_no_same_upload(tmp_path):
    assert copies_async(_trace(tmp_path, [TABLE] * 3, loader=True)).same_upload is None
    assert copies_async(_trace(tmp_path, [TABLE] * 3, pinned=True)).same_upload is None
    # autograd's upload of a host loss's gradient is new data each step (fresh10 conformer_ctc_loss_on_cpu)
    assert copies_async(_trace(tmp_path, [TABLE] * 3, gradient=True)).same_upload is None
    assert copies_async(_trace(tmp_path, [TABLE, TABLE // 2, TABLE // 4])).same_upload is None


def test_input_dims_or_types_that_are_not_lists_are_skipped_not_raised():
    """A trace's 'Input Dims' / 'Input type' may hold any JSON value: CI's fuzzing set them to true and
    same_upload and convert_on_gpu raised TypeError ('bool' object is not iterable)."""
    from tracetriage.analyzers.whatif.levers.convert_on_gpu import _tensors

    class Shapes:
        def shapes(self, row):
            return True, True, None

    assert _tensors(Shapes(), 0) == []
