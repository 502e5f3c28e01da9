"""Knobs whose op names state the cause, each on a small synthetic trace that shows it, and not where a look-alike
shows something else:
- topk: an argsort over a long row sliced to its first k (torch.topk), not a sort whose slice keeps most of it, nor a
  short row;
- cudnn_enabled: ATen's im2col convolutions and an LSTM stepped by ATen, no cuDNN anywhere (cudnn.enabled = True),
  not where cuDNN ran somewhere;
- kv_on_device: a KV cache copied to the host and back each layer, its length growing a token a step
  (cache_implementation="offloaded" dropped), not copies of one fixed shape, nor copies one way."""
from pathlib import Path

from kineto_factory import annotation, call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import CUDA_GRAPHS, CUDNN_ENABLED, KV_ON_DEVICE, LEVERS, TOPK, blocks_graphs
from tracetriage.analyzers.whatif.levers.topk import time_ratio

US = 1_000
BF16 = "c10::BFloat16"


class Host:
    """Ops laid out on one host thread, each launching its GPU activities in order on the device's queues."""

    def __init__(self):
        self.ev: list[dict] = []
        self.t, self.ext, self.gpu_t = 10 * US, 1, {7: 0, 94: 0}

    def op(self, name: str, *, dims=None, types=None, concrete=None, launches=(), host_ns: int = 8 * US,
           inner: list | None = None) -> None:
        """An op (with `inner` ops nested in it, each (name, dims, types, concrete)) launching `launches`:
        (activity name, its ns, category, stream, bytes) each, host_ns of host time before each launch."""
        start, ext = self.t, self.ext
        inner = inner or []
        exts = list(range(ext, ext + 1 + len(inner)))      # the innermost op's External id is its launches'
        self.ext += len(exts)
        t = start + 2 * US
        for kname, kns, cat, stream, nbytes in launches:
            t += host_ns
            corr = self.ext
            self.ext += 1
            api = "cudaMemcpyAsync" if cat == "gpu_memcpy" else "cudaLaunchKernel"
            self.ev.append(call(api, t, t + 4 * US, corr, exts[-1]))
            at = max(t + 6 * US, self.gpu_t[stream] + 1 * US)
            extra = {"bytes": nbytes} if nbytes else {}
            self.ev.append(gpu(kname, at, at + kns, corr, stream=stream, cat=cat, **extra))
            self.gpu_t[stream] = at + kns
            t += 4 * US
        end = t + 2 * US
        args = {"Concrete Inputs": concrete} if concrete is not None else {}
        self.ev.append(op(name, start, end, ext, dims=dims, types=types, **args))
        for i, (iname, idims, itypes, iconc) in enumerate(inner):
            a = {"Concrete Inputs": iconc} if iconc is not None else {}
            self.ev.append(op(iname, start + (i + 1) * 100, end - (i + 1) * 100, exts[i + 1], dims=idims, types=itypes,
                              **a))
        self.t = end + 3 * US

    def step(self, body) -> None:
        start = self.t
        body()                              # (the host runs ahead: the device works off its queue)
        self.ev.append(annotation(f"ProfilerStep#{len(self.ev)}", start - 1 * US, self.t))
        self.t += 5 * US

    def trace(self, tmp_path: Path, name: str):
        return load(write(tmp_path / name, document(self.ev)), use_cache=False)


# --- topk -------------------------------------------------------------------------------------------------------

def _retrieval_step(h: Host, n: int = 65536, keep: int = 100, topk: bool = False, sort_kernels: int = 40,
                    kernel_us: int = 200, keys: str = BF16) -> None:
    """Scores for 256 requests over n items, then the top `keep` of each row: by a full argsort sliced to `keep`
    (40 radix-sort kernels of 200 µs), or by torch.topk."""
    h.op("aten::mm", dims=[[256, 128], [128, n]], types=[BF16, BF16], launches=[("nvjet_sm90_gemm", 100 * US,
                                                                                "kernel", 7, 0)])
    if topk:
        h.op("aten::topk", dims=[[256, n], [], [], [], []], types=[BF16, "Scalar", "Scalar", "Scalar", "Scalar"],
             concrete=["", str(keep), "1", "True", "True"],
             launches=[("gatherTopK", 300 * US, "kernel", 7, 0)])
        return
    sort = ("aten::sort", [[256, n], [], [], []], [keys, "Scalar", "Scalar", "Scalar"], ["", "False", "1", "True"])
    h.op("aten::argsort", dims=[[256, n], [], []], types=[keys, "Scalar", "Scalar"], concrete=["", "1", "True"],
         inner=[sort], launches=[("DeviceRadixSortOnesweepKernel", kernel_us * US, "kernel", 7, 0)] * sort_kernels,
         host_ns=5 * US)
    h.op("aten::slice", dims=[[256, n], [], [], [], []], types=["long int", "Scalar", "Scalar", "Scalar", "Scalar"],
         concrete=["", "1", "0", str(keep), "1"])


def _retrieval(tmp_path, name="r.json.gz", **kw):
    h = Host()
    for _ in range(3):
        h.step(lambda: _retrieval_step(h, **kw))
    return h.trace(tmp_path, name)


def test_an_argsort_sliced_to_its_first_k_is_told_topk_priced_from_the_sort_kernels(tmp_path):
    tr = _retrieval(tmp_path)
    lv = whatif.predict(tr, [TOPK]).lever(TOPK)
    a = lv.assumption
    assert (a.count, a.n, a.k, a.rows) == (3, 65536, 100, 256)
    assert a.sort_ns == 3 * 40 * 200 * US
    assert a.topk_ns == round(a.sort_ns * time_ratio(2))         # bf16 keys: 2 counting passes and a gather
    assert lv.predicted_ratio < 0.4
    out = serialize.report(analyze_trace(tr))
    assert out["next_experiment"]["whatif_lever"] == TOPK
    assert "torch.topk(x, 100" in out["lines"][4]
    assert claims.check(out) == []


def test_topk_is_priced_per_element_in_passes_so_wider_keys_take_a_smaller_share_of_the_sort(tmp_path):
    # radix select's counting passes only read the keys and cost about the same per element for bf16 and fp32 (H100:
    # 1.84 and 1.99 ps), while each pass of the sort moves keys and int64 indices: fp32's four passes against bf16's
    # two make topk a smaller share of the sort (pairs4 sasrec_recommend_top10_argsort, fp32: 1.26 of 8.45 ms a step
    # measured, 0.15, where a bytes ratio priced 0.22)
    share = {}
    for keys in (BF16, "float"):
        a = whatif.predict(_retrieval(tmp_path, f"r_{len(keys)}.json.gz", keys=keys), [TOPK]).lever(TOPK).assumption
        share[keys] = a.topk_ns / a.sort_ns
    assert share["float"] < share[BF16]
    assert 0.12 < share["float"] < 0.16
    assert 0.14 < share[BF16] < 0.17


def test_a_sort_of_many_short_kernels_paced_by_its_launches_is_priced_within_what_its_edit_takes_out(tmp_path):
    """A segmented sort launches a few kernels a row: short ones wait on the host's launches, and the edit takes out
    those launches and the device's bubbles with the kernels (the claim checker holds the Next to all of it, not to
    the kernels' time alone: fresh11 retrieval_full_argsort_for_topk said -86% beside 20.8 ms of kernels)."""
    out = serialize.report(analyze_trace(_retrieval(tmp_path, sort_kernels=400, kernel_us=5)))
    assert out["next_experiment"]["whatif_lever"] == TOPK
    assert claims.check(out) == []


def test_an_ascending_sort_sliced_to_its_last_k_is_told_topk_of_the_largest_and_its_first_k_of_the_smallest(tmp_path):
    def step(h: Host, start: str, end: str) -> None:
        n = 65536
        h.op("aten::sort", dims=[[64, n], [], []], types=["float", "Scalar", "Scalar"], concrete=["", "-1", "False"],
             launches=[("DeviceRadixSortOnesweepKernel", 200 * US, "kernel", 7, 0)] * 20)
        h.op("aten::slice", dims=[[64, n], [], [], [], []], types=["float", "Scalar", "Scalar", "Scalar", "Scalar"],
             concrete=["", "1", start, end, "1"])
    for i, (start, end, words) in enumerate((("-50", "9223372036854775807", "torch.topk(x, 50, dim=-1)"),
                                             ("0", "50", "torch.topk(x, 50, dim=-1, largest=False)"))):
        h = Host()
        for _ in range(3):
            h.step(lambda: step(h, start, end))
        a = whatif.predict(h.trace(tmp_path, f"s{i}.json.gz"), [TOPK]).lever(TOPK).assumption
        assert (a.count, a.k) == (3, 50)
        assert LEVERS[TOPK].knob.change_for(a).startswith(words + " (")


def test_a_slice_keeping_most_of_a_sorted_row_a_short_row_or_topk_itself_is_not_this_construct(tmp_path):
    for i, kw in enumerate(({"keep": 32768}, {"n": 2048}, {"topk": True})):
        a = whatif.predict(_retrieval(tmp_path, f"n{i}.json.gz", **kw), [TOPK]).lever(TOPK).assumption
        assert a.count == 0, kw


def _top_p_step(h: Host) -> None:
    """Top-p sampling as Hugging Face's TopPLogitsWarper writes it: the row sorted ascending, its softmax's cumsum
    compared with 1 - p, and the last token always kept (mask[..., -1:] = 0: a slice of the bool mask written into)."""
    n = 50257
    h.op("aten::sort", dims=[[8, n], [], []], types=["float", "Scalar", "Scalar"], concrete=["", "-1", "False"],
         launches=[("DeviceRadixSortOnesweepKernel", 50 * US, "kernel", 7, 0)] * 8)
    h.op("aten::softmax", dims=[[8, n], [], []], types=["float", "Scalar", ""], concrete=["", "-1", ""],
         launches=[("softmax_warp_forward", 10 * US, "kernel", 7, 0)])
    h.op("aten::cumsum", dims=[[8, n], [], []], types=["float", "Scalar", ""], concrete=["", "-1", ""],
         launches=[("scan_kernel", 10 * US, "kernel", 7, 0)])
    h.op("aten::le", dims=[[8, n], []], types=["float", "Scalar"], concrete=["", "0.1"],
         launches=[("compare_kernel", 5 * US, "kernel", 7, 0)])
    h.op("aten::slice", dims=[[8, n], [], [], [], []], types=["bool", "Scalar", "Scalar", "Scalar", "Scalar"],
         concrete=["", "-1", "-1", "9223372036854775807", "1"])
    h.op("aten::fill_", dims=[[8, 1], []], types=["bool", "Scalar"], concrete=["", "0"],
         launches=[("fill_kernel", 2 * US, "kernel", 7, 0)])


def test_top_p_sampling_whose_sorted_mask_keeps_its_last_token_is_not_a_sort_sliced_to_k(tmp_path):
    h = Host()
    for _ in range(3):
        h.step(lambda: _top_p_step(h))
    a = whatif.predict(h.trace(tmp_path, "p.json.gz"), [TOPK]).lever(TOPK).assumption
    assert a.count == 0


# --- cudnn_enabled ----------------------------------------------------------------------------------------------

CONV = dict(dims=[[32, 64, 32, 32], [64, 64, 3, 3], [], [64], [], []],
            types=[BF16, BF16, "ScalarList", BF16, "ScalarList", "ScalarList"],
            concrete=["", "", "[3, 3]", "", "[1, 1]", "[1, 1]"])
CONV_FLOPS = 2.0 * 32 * 64 * 32 * 32 * 64 * 9          # N x C_out x H x W x C_in x taps, twice


def _crnn_step(h: Host, cudnn_somewhere: bool = False, cudnn_attention: bool = False) -> None:
    """A convolution on ATen's im2col path (per image an im2col kernel and a GEMM), then an LSTM stepped by ATen
    (per time step a GEMM and a fused cell, 30 µs of host before each launch)."""
    per_image = [("im2col_kernel", 20 * US, "kernel", 7, 0), ("nvjet_sm90_tst_bf16_gemm", 30 * US, "kernel", 7, 0)]
    h.op("aten::_slow_conv2d_forward", launches=per_image * 32, **CONV)
    cells = [("sm80_xmma_gemm_f32f32_f32f32_f32", 8 * US, "kernel", 7, 0),
             ("lstm_cell_forward", 3 * US, "kernel", 7, 0)]
    h.op("aten::lstm", dims=[[32, 16, 512]], types=["float"], launches=cells * 16, host_ns=30 * US,
         inner=[("aten::_thnn_fused_lstm_cell", [[32, 1024]], ["float"], None)])
    if cudnn_somewhere:
        h.op("aten::cudnn_convolution", dims=[[32, 64, 32, 32], [64, 64, 3, 3]], types=[BF16, BF16],
             launches=[("sm90_xmma_fprop_implicit_gemm_bf16", 40 * US, "kernel", 7, 0)])
    if cudnn_attention:      # SDPA's cuDNN backend: chosen by torch.backends.cuda's flags, not cudnn.enabled
        h.op("aten::_scaled_dot_product_cudnn_attention", dims=[[32, 12, 16, 64]] * 3, types=[BF16] * 3,
             launches=[("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7", 20 * US, "kernel", 7,
                        0)])
    h.op("aten::cudnn_is_acceptable", dims=[[32, 16, 512]], types=["float"])   # asked with cuDNN off too


def _crnn(tmp_path, name="c.json.gz", **kw):
    h = Host()
    for _ in range(3):
        h.step(lambda: _crnn_step(h, **kw))
    return h.trace(tmp_path, name)


def test_convolutions_and_an_lstm_on_atens_fallbacks_with_no_cudnn_are_told_cudnn_enabled(tmp_path):
    tr = _crnn(tmp_path)
    lv = whatif.predict(tr, [CUDNN_ENABLED]).lever(CUDNN_ENABLED)
    a = lv.assumption
    assert (a.convs, a.priced_convs, a.rnns, a.conv_kernels) == (3, 3, 3, 3 * 64)
    # no bf16 product outside the fallback is costed: each convolution at the rate its own per-image GEMMs reach
    assert a.cudnn_ns == 3 * 32 * 30 * US
    assert abs(a.tflops * 1e12 - CONV_FLOPS / (32 * 30 * US) * 1e9) < 1e6
    assert a.host_ns > 3 * 30 * 30 * US                  # the LSTM's host stretches between its launches go
    assert lv.predicted_ratio < 0.7
    assert "cudnn.enabled = True" in LEVERS[CUDNN_ENABLED].knob.change_for(a)
    out = serialize.report(analyze_trace(tr))
    assert out["next_experiment"]["whatif_lever"] == CUDNN_ENABLED
    assert "torch.backends.cudnn.enabled = True" in out["lines"][4]
    assert claims.check(out) == []


def test_a_trace_where_cudnn_ran_somewhere_is_not_told_to_turn_it_on(tmp_path):
    a = whatif.predict(_crnn(tmp_path, cudnn_somewhere=True), [CUDNN_ENABLED]).lever(CUDNN_ENABLED).assumption
    assert a.count == 0 and a.convs == 0 and a.rnns == 0


def _tcn_step(h: Host) -> None:
    """A dilated conv1d on ATen's fallback (slow_conv_dilated2d: per image and tap, select, fill_ and copy_ ops and a
    small kernel, 30 us of host before each launch, and a GEMM), then its backward, which records no op of its own
    inside aten::convolution_backward, then a ReLU."""
    per_image = [("elementwise_kernel_fill", 2 * US, "kernel", 7, 0),
                 ("elementwise_kernel_copy", 2 * US, "kernel", 7, 0),
                 ("nvjet_sm90_tst_bf16_gemm", 10 * US, "kernel", 7, 0)]
    h.op("aten::slow_conv_dilated2d", dims=[[8, 64, 1, 4096], [64, 64, 1, 7], [], [64], [], [], []],
         types=[BF16, BF16, "ScalarList", BF16, "ScalarList", "ScalarList", "ScalarList"],
         concrete=["", "", "[1, 7]", "", "[1, 1]", "[0, 12]", "[1, 2]"], launches=per_image * 8, host_ns=30 * US)
    h.op("aten::convolution_backward", dims=[[8, 64, 4108], [8, 64, 4096], [64, 64, 7]] + [[]] * 8,
         types=[BF16, BF16, BF16] + ["ScalarList"] * 8,
         concrete=[""] * 10 + ["[True, True, True]"], launches=per_image * 16, host_ns=30 * US)
    h.op("aten::relu", dims=[[8, 64, 4096]], types=[BF16], launches=[("relu_kernel", 5 * US, "kernel", 7, 0)])


def test_a_fallback_convolutions_host_loop_and_its_bare_backward_go_with_cudnn(tmp_path):
    """ATen's dilated convolution runs a host loop (select, fill_, copy_ per image and tap) that cuDNN's one call does
    not, and its backward records no op of its own: pairs4 tcn_ecg_dilated_conv1d_cudnn_off priced 0.298 (the
    forward's kernels fused, its host loop and the 8 backwards kept), 0.192 measured; 0.177 now."""
    h = Host()
    for _ in range(3):
        h.step(lambda: _tcn_step(h))
    lv = whatif.predict(h.trace(tmp_path, "tcn.json.gz"), [CUDNN_ENABLED]).lever(CUDNN_ENABLED)
    a = lv.assumption
    assert (a.convs, a.priced_convs) == (6, 6)       # each step's forward and its bare backward
    assert lv.predicted_ratio < 0.2, lv.predicted_ratio


def test_cudnns_attention_kernels_run_with_cudnn_off_and_do_not_hide_the_fallbacks(tmp_path):
    """cuDNN's SDPA kernels (cudnn_generated_fort_native_sdpa_*) run whatever cudnn.enabled says: pairs4
    bert_bigru_classifier_cudnn_off (its BERT's attention on cuDNN, its GRU on ATen's loop) was found to have cuDNN
    somewhere, 1.000 predicted, 0.785 measured; 0.589 now."""
    a = whatif.predict(_crnn(tmp_path, cudnn_attention=True), [CUDNN_ENABLED]).lever(CUDNN_ENABLED).assumption
    assert (a.convs, a.rnns) == (3, 3)


# --- kv_on_device -----------------------------------------------------------------------------------------------

def _decode(tmp_path, name="k.json.gz", grow: bool = True, back: bool = True, offload: bool = True):
    """A decode of 12 tokens over 4 layers: per layer a GEMM, then its keys and values [2, 4, T, 64] copied to the
    host (on the compute stream) and back (on a side stream), T growing a token a step."""
    h = Host()
    for token in range(12):
        t = 100 + (token if grow else 0)
        kv = [[2, 4, t, 64], [2, 4, t, 64], []]
        nbytes = 2 * 4 * t * 64 * 2

        def body():
            for _ in range(4):
                h.op("aten::mm", dims=[[2, 512], [512, 512]], types=[BF16, BF16],
                     launches=[("nvjet_sm90_gemm", 10 * US, "kernel", 7, 0)])
                for _ in range(2 if offload else 0):
                    h.op("aten::to", inner=[("aten::copy_", kv, [BF16, BF16, "Scalar"], None)],
                         launches=[("Memcpy DtoH (Device -> Pinned)", 300 * US, "gpu_memcpy", 7, nbytes)])
                    if back:
                        h.op("aten::to", inner=[("aten::copy_", kv, [BF16, BF16, "Scalar"], None)],
                             launches=[("Memcpy HtoD (Pinned -> Device)", 300 * US, "gpu_memcpy", 94, nbytes)])
        h.step(body)
    return h.trace(tmp_path, name)


def test_a_kv_cache_copied_to_the_host_and_back_each_layer_is_told_to_stay_on_the_device(tmp_path):
    tr = _decode(tmp_path)
    w = whatif.predict(tr, [KV_ON_DEVICE])
    a = w.lever(KV_ON_DEVICE).assumption
    assert (a.count, a.to_device, a.lengths) == (12 * 4 * 2, 12 * 4 * 2, 12)
    assert a.copy_ns == 2 * 12 * 4 * 2 * 300 * US
    assert a.shape == "[2, 4, 100, 64]"
    assert blocks_graphs(KV_ON_DEVICE, a)
    assert w.lever(KV_ON_DEVICE).predicted_ratio < 0.5
    out = serialize.report(analyze_trace(tr))
    assert out["next_experiment"]["whatif_lever"] == KV_ON_DEVICE
    nxt = out["lines"][4]
    assert 'cache_implementation="offloaded"' in nxt and "predicts no saving" not in nxt
    assert CUDA_GRAPHS not in (out["next_experiment"].get("whatif_lever"), out["next_experiment"].get("then"))
    assert claims.check(out) == []


def test_copies_of_one_fixed_shape_or_one_way_only_are_not_an_offloaded_kv_cache(tmp_path):
    for i, kw in enumerate(({"grow": False}, {"back": False})):
        a = whatif.predict(_decode(tmp_path, f"n{i}.json.gz", **kw), [KV_ON_DEVICE]).lever(KV_ON_DEVICE).assumption
        assert a.count == 0, kw


def test_diff_names_each_knob_its_change_applied(tmp_path):
    """The before trace beside the after of each fix (a topk for the sliced argsort, cuDNN's convolution for the
    fallback, the cache's copies gone): diff says which knob the change applied."""
    from tracetriage.analyzers.triage.diff import applied_lever

    pairs = [(TOPK, _retrieval(tmp_path, "b1.json.gz"), _retrieval(tmp_path, "a1.json.gz", topk=True)),
             (CUDNN_ENABLED, _crnn(tmp_path, "b2.json.gz"), _crnn(tmp_path, "a2.json.gz", cudnn_somewhere=True)),
             (KV_ON_DEVICE, _decode(tmp_path, "b3.json.gz"), _decode(tmp_path, "a3.json.gz", offload=False))]
    for lever, before, after in pairs:
        assert applied_lever(analyze_trace(before), analyze_trace(after))[0] == lever, lever
