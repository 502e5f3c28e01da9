"""Knobs offered only where the trace shows they apply, and the two the trace calls for: channels_last on 1-D
convolutions or beside InstanceNorm (nothing to set), a module moved to the host and back each request (keep it
on the GPU), tensor parallelism's per-layer all-reduces in a forward pass (no side stream hides them), and a step
whose only savings are the profiler's own (no one-line lever). Small synthetic traces, each with its negative."""
from __future__ import annotations

import dataclasses

from tests.kineto_factory import call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.verdicts import Experiment, Regime
from tracetriage.analyzers.triage.healthy import HEAVY_AT_MOST, no_lever_without_profiler
from tracetriage.analyzers.triage.lever_choice import LEVER_FLOOR, LeverChoice
from tracetriage.analyzers.triage.next_experiment import NextExperiment
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import LEVERS

US = 1_000


class Clock:
    """Builds one host thread's ops and launches, and one stream's GPU activities after them, in order."""

    def __init__(self):
        self.ev, self.t, self.gpu_t, self.id = [], 100 * US, 100 * US, 1

    def launch(self, kernel: str, dur_us: float, *, cat: str = "kernel", api: str = "cudaLaunchKernel",
               nbytes: int | None = None, ext: int | None = None, sync: bool = False) -> None:
        corr = 100_000 + self.id
        self.id += 1
        s = self.t
        self.ev.append(call(api, s, s + 4 * US, corr, ext))
        g0 = max(self.gpu_t, s + 5 * US)
        extra = {"bytes": nbytes} if nbytes is not None else {}
        self.ev.append(gpu(kernel, g0, g0 + int(dur_us * US), corr, cat=cat, **extra))
        self.gpu_t = g0 + int(dur_us * US) + 1 * US
        self.t = s + 5 * US
        if sync:
            self.t = max(self.t, self.gpu_t)
            self.ev.append(call("cudaStreamSynchronize", s + 5 * US, self.t + 2 * US, ext=ext))
            self.t += 3 * US

    def op(self, name: str, body, dims=None, types=None) -> None:
        """An op around what `body(ext)` launches (its calls inside the op's interval)."""
        ext = self.id
        self.id += 1
        s = self.t
        self.t += 2 * US
        body(ext)
        self.t += 2 * US
        self.ev.append(op(name, s, self.t, ext, dims=dims, types=types))
        self.t += 3 * US

    def write(self, tmp_path, name: str):
        return load(write(tmp_path / name, document(self.ev)))


# --- channels_last: the model's own convolutions ---------------------------------------------------------------

def _conv_model(tmp_path, rank: int, instance_norm: bool):
    """Convolutions whose aten::convolution records `rank`-D input and weight (cuDNN's call below it 4-D, as ATen
    unsqueezes a 1-D convolution), each wrapped in cuDNN's layout transposes; optionally an InstanceNorm after each."""
    c = Clock()
    x = [16, 64] + [32] * (rank - 2)
    w = [64, 64] + [3] * (rank - 2)
    for _ in range(12):
        def conv(ext):
            def cudnn(e):
                c.launch("void cudnn::ops::nchwToNhwcKernel<float, float, float, true, false>(...)", 40, ext=e)
                c.launch("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc", 100, ext=e)
                c.launch("void cudnn::ops::nhwcToNchwKernel<float, float, float, true, false>(...)", 40, ext=e)
            c.op("aten::cudnn_convolution", cudnn, dims=[[16, 64, 1, 32], [64, 64, 1, 3]],
                 types=["c10::BFloat16", "c10::BFloat16"])
        c.op("aten::convolution", conv, dims=[x, w], types=["c10::BFloat16", "c10::BFloat16"])
        if instance_norm:
            c.op("aten::instance_norm", lambda e: c.launch(
                "void at::native::batch_norm_transform_input_kernel<c10::BFloat16, float, float, int>(...)", 60,
                ext=e), dims=[x], types=["c10::BFloat16"])
        c.op("aten::relu", lambda e: c.launch("void at::native::vectorized_elementwise_kernel<4, relu>(...)", 20,
                                              ext=e))
    return c.write(tmp_path, f"conv{rank}{'_in' if instance_norm else ''}.json.gz")


def _channels_last(trace):
    return whatif.predict(trace, ["channels_last"]).lever("channels_last")


def test_channels_last_is_not_offered_to_a_model_whose_convolutions_are_1d(tmp_path):
    p = _channels_last(_conv_model(tmp_path, 3, instance_norm=False))
    assert p.assumption.count == 0 and p.predicted_ratio == 1.0
    assert "1-D" in LEVERS["channels_last"].says(p.assumption)


def test_channels_last_prices_the_transposes_of_a_2d_model(tmp_path):
    p = _channels_last(_conv_model(tmp_path, 4, instance_norm=False))
    assert p.assumption.count == 24 and p.predicted_ratio < 0.97


def test_channels_last_is_not_offered_where_an_instance_norm_follows_each_convolution(tmp_path):
    p = _channels_last(_conv_model(tmp_path, 5, instance_norm=True))
    assert p.assumption.count == 0 and p.predicted_ratio == 1.0
    said = LEVERS["channels_last"].says(p.assumption)
    assert "12 of the model's 12 convolutions feed an InstanceNorm" in said and "channels_last_3d" in said


# --- a module moved to the host and back ------------------------------------------------------------------------

def _offload(tmp_path, name: str, *, back: bool = True, module: bool = True, params: int = 8):
    """Requests of `params` parameter copies to the device (Module.to), compute, and copies back to the host; each
    copy's aten::to followed by nn.Module._apply's _has_compatible_shallow_copy_type (module=False: plain .cpu())."""
    c = Clock()

    def move(kind: str):
        for _ in range(params):
            c.op("aten::to", lambda e: c.launch(f"Memcpy {kind}", 400, cat="gpu_memcpy", api="cudaMemcpyAsync",
                                                nbytes=4 << 20, ext=e, sync=True))
            if module:
                c.op("aten::_has_compatible_shallow_copy_type", lambda e: None)

    for _ in range(2):
        move("HtoD (Pageable -> Device)")
        for _ in range(20):
            c.op("aten::mm", lambda e: c.launch("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", 30, ext=e))
        if back:
            move("DtoH (Device -> Pageable)")
    return c.write(tmp_path, name)


def test_a_module_moved_to_the_host_and_back_each_request_is_kept_on_the_gpu(tmp_path):
    p = whatif.predict(_offload(tmp_path, "offload.json.gz"), ["module_round_trip"]).lever("module_round_trip")
    a = p.assumption
    assert a.count == 32 and a.to_host == 16 and a.syncs == 32 and a.pageable
    assert p.predicted_ratio < 0.5        # the copies (12.8 ms of 13.9 ms on the device) go
    assert "the module stays on the GPU" in LEVERS["module_round_trip"].says(a)


def test_a_model_moved_to_the_gpu_once_is_no_round_trip(tmp_path):
    p = whatif.predict(_offload(tmp_path, "load.json.gz", back=False), ["module_round_trip"]).lever(
        "module_round_trip")
    assert p.assumption.count == 0 and p.predicted_ratio == 1.0


def test_tensors_copied_without_module_to_are_no_round_trip(tmp_path):
    p = whatif.predict(_offload(tmp_path, "cpu.json.gz", module=False), ["module_round_trip"]).lever(
        "module_round_trip")
    assert p.assumption.count == 0


# --- tensor parallelism's per-layer all-reduces ----------------------------------------------------------------

AR = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def _layers(tmp_path, name: str, *, after: str, backward: bool = False):
    """Layers of GEMM, all-reduce, then `after` on one stream: a norm (tensor parallelism's row-parallel output
    read by the next layer's add and norm) or the next GEMM."""
    c = Clock()
    for _ in range(16):
        c.op("aten::mm", lambda e: c.launch("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64", 80, ext=e))
        c.op("c10d::allreduce_", lambda e: c.launch(AR, 60, ext=e))
        c.op("aten::add", lambda e: c.launch(after, 10, ext=e))
    if backward:
        c.op("autograd::engine::evaluate_function: MmBackward0",
             lambda e: c.launch("sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n", 80, ext=e))
    return c.write(tmp_path, name)


NORM = "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0"


def test_per_layer_all_reduces_of_a_forward_pass_are_no_overlap_lever(tmp_path):
    p = whatif.predict(_layers(tmp_path, "tp.json.gz", after=NORM), ["overlap_comm"]).lever("overlap_comm")
    assert p.assumption.count == 0 and p.assumption.per_layer == 16 and p.predicted_ratio == 1.0
    said = LEVERS["overlap_comm"].says(p.assumption)
    assert "tensor parallelism" in said and "DDP" not in said


def test_the_same_layers_in_a_training_step_keep_the_overlap_lever(tmp_path):
    p = whatif.predict(_layers(tmp_path, "ddp.json.gz", after=NORM, backward=True), ["overlap_comm"]).lever(
        "overlap_comm")
    assert p.assumption.count == 16 and p.assumption.per_layer == 0


def test_all_reduces_followed_by_the_next_gemm_keep_the_overlap_lever(tmp_path):
    p = whatif.predict(_layers(tmp_path, "loop.json.gz", after="sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"),
                       ["overlap_comm"]).lever("overlap_comm")
    assert p.assumption.count == 16


# --- a healthy step: the savings are the profiler's ------------------------------------------------------------

@dataclasses.dataclass
class Unprofiled:
    """What the report asks of the what-if levers here: each lever's ratio without the profiler."""
    ratios: dict

    def unprofiled_ratio(self, trace, lever, only=None):
        return self.ratios[lever]


@dataclasses.dataclass
class Profiler:
    unprofiled_ns: int = 89_000_000
    unprofiled_idle_share: float = 0.14


def _choice(lever: str, saving: float, unprofiled: float | None = None) -> LeverChoice:
    return LeverChoice(lever, None, 100_000_000, int(100_000_000 * (1 - saving)), unprofiled_ratio=unprofiled)


def _graphs_next(unprofiled: float) -> NextExperiment:
    return NextExperiment(Experiment.CUT_LAUNCHES, None, 0.3, lever=_choice("cuda_graphs", 0.22, unprofiled))


def test_a_next_whose_saving_is_the_profilers_own_becomes_no_one_line_lever():
    choices = (_choice("cuda_graphs", 0.22), _choice("no_host_work", 0.09), _choice("fuse", 0.03))
    nx = no_lever_without_profiler(_graphs_next(0.977), Unprofiled({"no_host_work": 0.935, "fuse": 0.945}), None,
                                   choices, Profiler(), Regime.LATENCY, LEVER_FLOOR)
    assert nx.lever is None and nx.kind is Experiment.BETTER_KERNELS and nx.healthy is not None
    assert nx.healthy.heavy.lever == "no_host_work" and abs(nx.healthy.heavy_unprofiled - 0.065) < 1e-9


def test_no_lever_where_the_regime_is_unknown_says_find_the_bound_not_the_levers_cause():
    # a host-work Next kept as the kind without its lever named host idle the trace may not hold (a public H800
    # training trace: the invariant "Next is move_host_work but the trace has no host_work idle" broke)
    nx = NextExperiment(Experiment.MOVE_HOST_WORK, None, 0.03, lever=_choice("no_host_work", 0.03, 0.99))
    out = no_lever_without_profiler(nx, Unprofiled({}), None, (nx.lever,), Profiler(), Regime.UNKNOWN, LEVER_FLOOR)
    assert out.lever is None and out.healthy is not None and out.kind is Experiment.FIND_THE_BOUND


def test_a_next_that_holds_up_without_the_profiler_stays():
    nx = _graphs_next(0.80)
    assert no_lever_without_profiler(nx, Unprofiled({}), None, (nx.lever,), Profiler(), Regime.LATENCY,
                                     LEVER_FLOOR) is nx


def test_a_one_line_knob_that_holds_up_without_the_profiler_keeps_the_next():
    choices = (_choice("cuda_graphs", 0.22), _choice("channels_last", 0.06))
    nx = _graphs_next(0.98)
    assert no_lever_without_profiler(nx, Unprofiled({"channels_last": 0.95}), None, choices, Profiler(),
                                     Regime.LATENCY, LEVER_FLOOR) is nx


def test_a_restructure_that_saves_a_tenth_without_the_profiler_keeps_the_next():
    choices = (_choice("cuda_graphs", 0.22), _choice("no_host_work", 0.15))
    nx = _graphs_next(0.98)
    assert no_lever_without_profiler(nx, Unprofiled({"no_host_work": 0.98 - HEAVY_AT_MOST}), None, choices, Profiler(),
                                     Regime.LATENCY, LEVER_FLOOR) is nx


def _said(**values):
    from tracetriage.analyzers.output.claims_said import Said

    return Said([{"key": f"next.healthy.{k}", "value": v, "said": f"{100 * v:.0f}%"} for k, v in values.items()])


def test_the_checker_catches_no_one_line_lever_beside_a_fix_that_holds_up_without_the_profiler():
    from tracetriage.analyzers.output.healthy_claims import no_lever_only_where_the_profiler_holds_the_saving as rel

    assert rel(_said(unprofiled_saving=0.023, floor=0.03, traced_saving=0.22, heavy_saving=0.065)) == []
    assert rel(_said(unprofiled_saving=0.08, floor=0.03, traced_saving=0.22))
    assert rel(_said(unprofiled_saving=0.01, floor=0.03, traced_saving=0.02))
    assert rel(_said(unprofiled_saving=0.01, floor=0.03, traced_saving=0.22, heavy_saving=0.25))


def test_the_idle_line_offers_no_removal_of_syncs_that_are_a_module_round_trips_own(tmp_path):
    from tracetriage.analyzers.triage.report import analyze_trace
    from tracetriage.analyzers.whatif.levers import module_round_trip

    a = analyze_trace(_offload(tmp_path, "offload.json.gz"))
    assert module_round_trip.owns_syncs(a.levers, "aten::to") and a.serialising_syncs is None
    assert a.next_experiment.lever.lever == "module_round_trip"
    assert not module_round_trip.owns_syncs(a.levers, "aten::item")


def test_fewer_bytes_does_not_call_fusion_the_weeks_waste():
    from pathlib import Path

    from tracetriage.analyzers.triage.report import analyze_file

    nx = analyze_file(Path(__file__).parent.parent / "traces" / "fresh5" / "effnet_eval_no_grad-after.json.gz"
                      ).next_experiment
    assert nx.kind is Experiment.FEWER_BYTES and nx.waste is not None and nx.waste.lever != "fuse"
