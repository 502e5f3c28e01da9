"""Work the step re-does (analyses.rework) leads the Next on a busy GPU (triage.rework_first): a concatenation
regrown call after call, an unmerged low-rank adapter beside its full product. Was: fresh12 two_tower_index_cat_growth
(aten::cat 76% of device time, each call's input the last call's output) and llama_lora_unmerged_scoring (rank-16
products, a scale and an add beside each full one, ~22% of kernel time) both read "no one-line lever: the savings
this trace offers are mostly the profiler's own cost"; measured 1.97x and 1.36x for the one-line fixes."""
from __future__ import annotations

from kineto_factory import annotation, call, document, gpu, op, write
from tracetriage.analyzers.model.rework import GROWING_CAT, LOW_RANK
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.report import five_lines

US = 1000


class _Timeline:
    """Ops launched 8 µs apart on the host, their kernels queued back to back on the GPU (a busy device)."""

    def __init__(self):
        self.ev: list[dict] = []
        self.host = 50 * US
        self.gpu = 400 * US
        self.id = 1

    def add(self, name: str, kernel_us: int, dims, types, concrete=None, kernel="void k<float>(float*)"):
        h, i = self.host, self.id
        extra = {"Concrete Inputs": concrete} if concrete is not None else {}
        self.ev += [op(name, h, h + 6 * US, i, dims=dims, types=types, **extra),
                    call("cudaLaunchKernel", h + 1 * US, h + 5 * US, corr=i, ext=i),
                    gpu(kernel, self.gpu, self.gpu + kernel_us * US, i)]
        self.host += 8 * US
        self.gpu += kernel_us * US + 1 * US
        self.id += 1

    def analyze(self, tmp_path, name: str):
        self.ev.append(annotation("ProfilerStep#1", 40 * US, self.host + 10 * US))
        return analyze_file(write(tmp_path / f"{name}.json", document(self.ev)))


def _cat_loop(grows: bool) -> _Timeline:
    """40 iterations of a small tower GEMM, then a concatenation onto an index: `idx = torch.cat([idx, piece])`
    (grows: each call's first input the last call's output, its copy growing with it) or a fixed-size cat."""
    t = _Timeline()
    for i in range(40):
        t.add("aten::addmm", 12, [[256], [1024, 512], [512, 256], [], []], ["c10::BFloat16"] * 3 + ["Scalar"] * 2)
        rows = 1024 * (i + 1) if grows else 1024
        t.add("aten::cat", 4 + 3 * i if grows else 6, [[[rows, 256], [1024, 256]], []], ["TensorList", "Scalar"],
              ["", "0"], kernel="void at::native::CatArrayBatchedCopy<float>(float*)")
    return t


def test_a_concatenation_regrown_each_call_leads_the_next_on_a_busy_gpu(tmp_path):
    a = _cat_loop(grows=True).analyze(tmp_path, "cat_grows")
    assert a.next_experiment.rework is not None and a.next_experiment.rework.kind == GROWING_CAT
    nxt = five_lines(a)[4]
    assert nxt.startswith("Next: stop regrowing one tensor by concatenation: 40 aten::cat calls (1 chain)"), nxt
    assert "[2,048, 256] → [41,984, 256]" in nxt and "collect the pieces in a list and concatenate once" in nxt
    assert "a bound, not a prediction" in nxt and "profiler's own cost" not in nxt.split("Would waste")[0]
    assert claims.check(serialize.report(a)) == []


def test_a_concatenation_of_fixed_size_pieces_is_not_rework(tmp_path):
    a = _cat_loop(grows=False).analyze(tmp_path, "cat_fixed")
    assert a.next_experiment.rework is None
    assert "regrowing" not in five_lines(a)[4]


def _adapter_layers(full_twin: bool) -> _Timeline:
    """16 projections, each a full [4096,2048]x[2048,2048] product and a rank-16 pair beside it, scaled and added
    onto it (an unmerged LoRA adapter); without the full twin the pair is a bottleneck layer, not an adapter."""
    t, bf = _Timeline(), "c10::BFloat16"
    for _ in range(16):
        if full_twin:
            t.add("aten::mm", 60, [[4096, 2048], [2048, 2048]], [bf, bf], kernel="nvjet_tst_128x256_64x4_h_bz_NNT")
        t.add("aten::mm", 8, [[4096, 2048], [2048, 16]], [bf, bf], kernel="nvjet_tst_64x8_64x16_h_bz_NNT")
        t.add("aten::mm", 8, [[4096, 16], [16, 2048]], [bf, bf], kernel="nvjet_tst_128x64_64x8_h_bz_NNT")
        t.add("aten::mul", 10, [[4096, 2048], []], [bf, "Scalar"], ["", "2"])
        t.add("aten::add", 14, [[4096, 2048], [4096, 2048], []], [bf, bf, "Scalar"], ["", "", "1"])
    return t


def test_an_unmerged_low_rank_adapter_beside_its_full_product_leads_the_next(tmp_path):
    a = _adapter_layers(full_twin=True).analyze(tmp_path, "lora")
    assert a.next_experiment.rework is not None and a.next_experiment.rework.kind == LOW_RANK
    nxt = five_lines(a)[4]
    assert nxt.startswith("Next: merge the low-rank adapters into their weights"), nxt
    assert "rank-16 pair" in nxt and "a reading, not proven by the trace" in nxt
    assert claims.check(serialize.report(a)) == []


def test_a_merge_that_removes_launches_is_priced_as_an_estimate_not_a_kernel_time_bound(tmp_path):
    """fresh12 llama_lora_unmerged_scoring: "a bound, not a prediction ... up to −18% of the span" counted the adapters'
    kernel time alone; the merge removed their launches and Python too and measured −26% (−41% traced)."""
    a = _adapter_layers(full_twin=True).analyze(tmp_path, "lora_estimate")
    assert a.next_experiment.rework.launches == 64          # 16 x (two products, a scale, an add)
    nxt = five_lines(a)[4]
    merge = nxt.split("; the trace has no backward pass")[0]
    assert "a bound, not a prediction" not in merge and "up to −" not in merge
    assert "an estimate, not a prediction" in merge
    assert "more where their 64 launches and the adapters' Python go too" in merge


def test_a_low_rank_pair_without_a_full_twin_is_no_adapter(tmp_path):
    a = _adapter_layers(full_twin=False).analyze(tmp_path, "bottleneck")
    assert a.next_experiment.rework is None


def test_a_bf16_concatenation_is_costed_at_the_element_size_its_kernel_names(tmp_path):
    """Was: fresh12 two_tower's Regime line quoted the tower's minor ops while its bf16 index concatenation (76% of
    device time) sat in "unknown": a TensorList records no dtype, opcost assumed fp32, the doubled bytes passed the
    memory's peak and the op was left out as an attribution error. CatArrayBatchedCopy names OpaqueType<2u>."""
    t = _Timeline()
    kernel = ("void at::native::(anonymous namespace)::CatArrayBatchedCopy_vectorized<at::native::(anonymous "
              "namespace)::OpaqueType<2u>, unsigned int, 2, 128, 1, 16, 8>(char*, int)")
    for _ in range(20):   # 2 x 4096 x 1024 bf16 elements read and written: 33.6 MB in 12 µs, 2.8 TB/s (fp32: 5.6)
        t.add("aten::cat", 12, [[[4096, 1024], [4096, 1024]], []], ["TensorList", "Scalar"], ["", "0"], kernel=kernel)
    a = t.analyze(tmp_path, "cat_bf16")
    cat = [p for p in a.roof.points if p.name == "aten::cat"]
    assert cat and cat[0].dtype == "bf16" and not a.roof.above_peak
    assert a.verdict.unknown_us == 0


def test_each_product_signature_is_read_once_however_many_calls_repeat_it(tmp_path, monkeypatch):
    """The products' (M, K, N) are parsed once per (name, shapes) signature: 16 layers of three products and a scale
    and an add repeat 5 signatures, where reading each row (a 293 MB trace's ~50k products, scales and adds in
    Python) cost the report ~0.1 s. The finding is the same."""
    from tracetriage.analyzers.analyses import rework

    read = []
    real = rework._mkn
    monkeypatch.setattr(rework, "_mkn", lambda trace, row, name: read.append(name) or real(trace, row, name))
    a = _adapter_layers(full_twin=True).analyze(tmp_path, "lora_once")
    assert a.next_experiment.rework is not None and a.next_experiment.rework.kind == LOW_RANK
    assert a.next_experiment.rework.calls == 32 and a.next_experiment.rework.rank == 16
    assert sorted(read) == ["aten::add", "aten::mm", "aten::mm", "aten::mm", "aten::mul"], read
