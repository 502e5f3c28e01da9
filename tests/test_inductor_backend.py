"""A torch.compile whose backend generates no code (backend="aot_eager"): the compiled ranges launch stock ATen
kernels one by one and the trace holds no Triton kernel. The Next names backend="inductor" (the default), priced as
fusion prices the chains inside the compiled ranges; a compile that generated Triton kernels, or eager code with no
compiled range, is not this construct."""
from kineto_factory import op
from test_loop_knobs import Timeline, _context
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import INDUCTOR_BACKEND, LEVERS, inductor_backend

X = [64, 1024, 1024]


def _compiled_step(tl: Timeline, generated: bool = False, compiled: bool = True,
                   wrapper: str = "CompiledFunction") -> None:
    """A compiled forward: per layer a product, then an elementwise chain (bias add, gelu, scale, residual add)
    over one [64, 1024, 1024] shape, each op its own kernel (aot_eager) or Triton's (Inductor)."""
    start, first = tl.t, len(tl.ev)
    for _ in range(8):
        tl.op("aten::mm", [[65536, 1024], [1024, 1024]])
        for name in ("aten::add", "aten::gelu", "aten::mul", "aten::add"):
            tl.op(name, [X, X])
    if generated:
        for e in tl.ev[first:]:
            if e.get("cat") == "kernel":
                e["name"] = "triton_poi_fused_add_gelu_mul_0"
    if compiled:
        tl.ev.append(op(wrapper, start - 500, tl.t - 500, None))


def _trace(tmp_path, name: str = "t.json.gz", **kw):
    tl = Timeline(gap_ns=30_000, kernel_ns=40_000)
    for _ in range(3):
        tl.step(lambda: _compiled_step(tl, **kw))
    return tl.trace(tmp_path, name)


def test_a_compile_with_no_generated_code_is_told_backend_inductor_priced_as_fusion(tmp_path):
    tr = _trace(tmp_path)
    assert len(inductor_backend.regions(_context(tr))) == 3
    lv = whatif.predict(tr, [INDUCTOR_BACKEND]).lever(INDUCTOR_BACKEND)
    a = lv.assumption
    assert a.regions == 3 and a.kernels == 3 * 8 * 5 and a.count > 0
    assert lv.predicted_ratio < 0.9          # the chains' kernels fuse: 4 kernels of 40 µs a layer become fewer
    assert 'backend="inductor"' in LEVERS[INDUCTOR_BACKEND].knob.change_for(a)
    assert "no Triton kernel" in inductor_backend.says(a)
    out = serialize.report(analyze_trace(tr))
    assert out["next_experiment"]["whatif_lever"] == INDUCTOR_BACKEND
    assert 'backend="inductor"' in out["lines"][4]
    assert claims.check(out) == []


def test_a_compile_that_generated_triton_kernels_or_eager_code_is_not_this_construct(tmp_path):
    assert len(inductor_backend.regions(_context(_trace(tmp_path, "a.json.gz", generated=True)))) == 0
    eager = _trace(tmp_path, "b.json.gz", compiled=False)
    a = whatif.predict(eager, [INDUCTOR_BACKEND]).lever(INDUCTOR_BACKEND).assumption
    assert a.count == 0 and a.regions == 0


def test_generated_code_launches_its_kernels_without_atens_dispatch_before_each(tmp_path):
    """On a host-paced compiled step (60 µs of dispatch and FX interpreter before each 5 µs kernel) Inductor's wrapper
    launches the kernels it generates itself: the dispatch before each elementwise launch goes, the products' stays
    (an extern ATen call under Inductor too). Pricing the chains alone kept every op's dispatch: 0.50 predicted, 0.23
    now."""
    tl = Timeline(gap_ns=60_000, kernel_ns=5_000)
    for _ in range(3):
        tl.step(lambda: _compiled_step(tl))
    for e in tl.ev:
        if e.get("cat") == "kernel" and e["name"] == "mm_kernel":
            e["name"] = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"
    lv = whatif.predict(tl.trace(tmp_path), [INDUCTOR_BACKEND]).lever(INDUCTOR_BACKEND)
    a = lv.assumption
    assert a.generated_launches == 3 * 8 * 4 and a.dispatch_ns >= 3 * 8 * 4 * 20_000
    assert lv.predicted_ratio < 0.35, lv.predicted_ratio
    assert "lose ATen's dispatch" in inductor_backend.says(a)


def test_a_compile_run_under_no_grad_is_found_by_dynamos_region_alone(tmp_path):
    """Under torch.no_grad AOTAutograd makes no autograd.Function: the trace marks the compiled call only with dynamo's
    Torch-Compiled Region: N/M, around the same one-by-one ATen kernels (pairs3 mixer_scoring_debug_compile_backend:
    found nothing, 1.000 predicted, 0.647 measured; 0.718 now). Generated code there still says Inductor ran."""
    region = "Torch-Compiled Region: 0/0"
    tr = _trace(tmp_path, wrapper=region)
    assert len(inductor_backend.regions(_context(tr))) == 3
    lv = whatif.predict(tr, [INDUCTOR_BACKEND]).lever(INDUCTOR_BACKEND)
    assert lv.assumption.kernels == 3 * 8 * 5 and lv.predicted_ratio < 0.9
    generated = _trace(tmp_path, "g.json.gz", wrapper=region, generated=True)
    assert len(inductor_backend.regions(_context(generated))) == 0
