"""An op the loop runs on the host's cores on tensors it copied off the device (torchvision's nms on `.cpu()` boxes, a
CTC loss on `.cpu()` log-probs) is named with "run it on the device", priced from the round trip it removes, and not
told CUDA graphs or generic host work; its autograd node on the host is counted with it. The look-alikes (the op
launching its kernel, a host reduction: reduce_on_gpu's, a host op fed by no copy off the device, one trip) are not."""
from kineto_factory import op
from test_host_blocking_steps import NODE, Host
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import CUDA_GRAPHS, OP_ON_GPU, REDUCE_ON_GPU, op_on_gpu
from tracetriage.analyzers.whatif.levers.spec import Context

NMS_NS = 2_000_000


def _postprocess(h: Host, images: int, nms_on_gpu: bool = False, copied: bool = True, glue: int = 0) -> None:
    """A detector's batch, then per image: boxes and scores copied off the device, nms on the host, the kept boxes
    indexed on the device by the host's indices (an upload)."""
    for _ in range(12):
        h.kernel_op("aten::cudnn_convolution", [[16, 64, 80, 80], [64, 64, 3, 3]])
    for _ in range(images):
        h.kernel_op("aten::add", [[1000, 4], [1000, 1]])
        if nms_on_gpu:
            h.kernel_op("torchvision::nms", [[1000, 4], [1000]])
        else:
            if copied:
                h.copy_op("DtoH", [[1000, 4]])
                h.copy_op("DtoH", [[1000]])
            else:       # a count read off the device; the boxes nms takes were made on the host
                h.copy_op("DtoH", [[1]])
            for _ in range(glue):   # batched_nms's class offsets on the host: max, casts, scalar adds, a multiply
                h.host_op("aten::add", [[1000, 4], [1000, 1]], dur=10_000)
            h.host_op("torchvision::nms", [[1000, 4], [1000]], dur=NMS_NS)
        h.host_op("aten::slice", [[873]], dur=3_000)
        h.copy_op("HtoD", [[873]], dur=30_000, copy_ns=2_000)


def _ctc_step(h: Host) -> None:
    """A speech model's step: the log-probs copied off the device, the CTC loss and its backward on the host, the
    gradient uploaded by ToCopyBackward0."""
    for _ in range(30):
        h.kernel_op("aten::addmm", [[16, 499, 512], [512, 512]])
    h.copy_op("DtoH", [[499, 16, 32]])
    h.host_op("aten::ctc_loss", [[499, 16, 32], [16, 120], [16], [16]], dur=3_500_000)
    h.host_op(NODE + "MeanBackward0", [], dur=50_000)
    h.host_op(NODE + "CtcLossBackward0", [], dur=6_000_000)
    s = h.t
    h.copy_op("HtoD", [[499, 16, 32]])
    h.ev.append(op(NODE + "ToCopyBackward0", s - 500, h.t - 500, None))
    for _ in range(30):
        h.kernel_op("aten::mm", [[16, 499, 512], [512, 512]])


def test_nms_run_on_the_host_on_copied_boxes_is_told_run_it_on_the_device_not_host_work_or_graphs(tmp_path):
    h = Host()
    for _ in range(2):
        h.step(lambda: _postprocess(h, 16))
    tr = h.trace(tmp_path)
    trips = op_on_gpu.find(Context(tr, None))
    # one trip an image from its first copy (boxes, then scores: not two trips), none of them a backward node
    assert len(trips) == 32 and {t[4] for t in trips} == {"torchvision::nms"}
    lv = whatif.predict(tr, [OP_ON_GPU]).lever(OP_ON_GPU)
    a = lv.assumption
    assert a.count == 32 and a.nodes == 0 and a.op_ns >= 32 * (NMS_NS - 1_000) and a.per_call_ns >= NMS_NS - 1_000
    # the host op's time goes from the critical path: most of 32 x 2 ms
    assert lv.saving_ns >= 32 * 0.8 * NMS_NS
    out = serialize.report(analyze_trace(tr))
    nxt = out["lines"][4]
    assert out["next_experiment"]["whatif_lever"] == OP_ON_GPU
    assert "run torchvision::nms on the device" in nxt
    assert "CUDA graphs" not in nxt.split("Would waste")[0] and "py-spy" not in nxt.split("Would waste")[0]
    assert claims.check(out) == []


def test_small_host_ops_between_the_copies_and_nms_do_not_hide_the_trip(tmp_path):
    """torchvision's batched_nms offsets each class's boxes on the host before nms: a max, casts, scalar adds and a
    multiply, 11 small outermost ops between the last copy and the op (pairs3 retinanet_postprocess_nms_on_host:
    found nothing past three ops, 1.000 predicted, 0.390 measured; 0.414 now)."""
    h = Host()
    for _ in range(2):
        h.step(lambda: _postprocess(h, 8, glue=11))
    tr = h.trace(tmp_path)
    assert len(op_on_gpu.find(Context(tr, None))) == 16
    assert whatif.predict(tr, [OP_ON_GPU]).lever(OP_ON_GPU).saving_ns >= 16 * 0.8 * NMS_NS


def test_a_ctc_loss_on_the_host_counts_its_backward_node_and_the_gradients_upload(tmp_path):
    h = Host()
    for _ in range(3):
        h.step(lambda: _ctc_step(h))
    tr = h.trace(tmp_path)
    trips = op_on_gpu.find(Context(tr, None))
    names = sorted(t[4] for t in trips)
    assert names == ["aten::ctc_loss"] * 3 + [NODE + "CtcLossBackward0"] * 3
    a = whatif.predict(tr, [OP_ON_GPU]).lever(OP_ON_GPU).assumption
    assert a.op == "aten::ctc_loss" and a.nodes == 3 and a.backward_ns >= 3 * 5_990_000
    words = op_on_gpu.says(a)
    assert "3 calls" in words and "its backward" in words and "3 autograd nodes" in words
    assert "run aten::ctc_loss on the device" in op_on_gpu.change_for(a)


def test_nms_launching_its_kernel_is_no_host_round_trip(tmp_path):
    h = Host()
    for _ in range(2):
        h.step(lambda: _postprocess(h, 16, nms_on_gpu=True))
    assert op_on_gpu.find(Context(h.trace(tmp_path), None)) == []


def test_a_host_op_fed_by_no_copy_off_the_device_is_not_this_construct(tmp_path):
    # host work uploaded after, beside a read of another tensor: the op's inputs never left the device's memory
    h = Host()
    for _ in range(2):
        h.step(lambda: _postprocess(h, 16, copied=False))
    assert op_on_gpu.find(Context(h.trace(tmp_path), None)) == []


def test_a_tensor_copied_off_for_a_print_is_no_round_trip(tmp_path):
    # print(t): the copy, then the host's formatting (aten::unbind over its rows); nothing returns to the device
    h = Host()
    for _ in range(6):
        h.kernel_op("aten::addmm", [[64, 512], [512, 512]])
        h.copy_op("DtoH", [[64, 512]])
        h.host_op("aten::unbind", [[64, 512]], dur=400_000)
    assert op_on_gpu.find(Context(h.trace(tmp_path), None)) == []


def test_a_host_argmax_is_left_to_reduce_on_gpu_and_one_trip_is_a_result_not_a_loop(tmp_path):
    h = Host()
    for _ in range(8):
        h.copy_op("DtoH", [[32, 50257]])
        h.host_op("aten::argmax", [[32, 50257]], dur=300_000)
        h.copy_op("HtoD", [[32, 1]], dur=30_000, copy_ns=2_000)
    tr = h.trace(tmp_path)
    assert op_on_gpu.find(Context(tr, None)) == []
    assert whatif.predict(tr, [REDUCE_ON_GPU]).lever(REDUCE_ON_GPU).assumption.count == 8
    once = Host()
    once.step(lambda: _postprocess(once, 1))
    assert op_on_gpu.find(Context(once.trace(tmp_path, "once.json.gz"), None)) == []


def test_a_round_trip_through_the_host_blocks_cuda_graphs():
    from tracetriage.analyzers.whatif.levers import blocks_graphs

    a = op_on_gpu.OpOnGpu(OP_ON_GPU, 4, op="aten::ctc_loss")
    assert blocks_graphs(OP_ON_GPU, a) and not blocks_graphs(CUDA_GRAPHS, a)
    assert not blocks_graphs(OP_ON_GPU, op_on_gpu.OpOnGpu(OP_ON_GPU, 0))
