"""A serving engine's decode steps read for what they are: GPU-bound steps of a few sequences whose kernels are mostly
matrix products replayed from CUDA graphs (no shapes) are a memory-bound decode, grounded by the engine's step names,
not a regime left unknown with a re-capture for shapes as the Next; its per-step token sync is deferred by the
engine's async scheduling (heldout-user17 gb10decode, gptoss3090a/b)."""
from pathlib import Path

from tests.kineto_factory import annotation, call, document, gpu, op, write
from tracetriage.analyzers.analyses.decode_steps import engine_batch
from tracetriage.analyzers.model.verdicts import Experiment, Regime
from tracetriage.analyzers.output import serialize
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.health import health_line
from tracetriage.analyzers.voice.report import five_lines

US = 1_000
GEMM = "void marlin_moe_wna16::Marlin<256, 1, 8, 8, 4, 8, false>(int4 const*, int4 const*)"
ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >"


def engine_trace(tmp_path: Path, *, sequences: int = 4, steps: int = 12, host_us: int = 300, gemm_us: int = 200,
                 gemms: int = 10, prefill_gemms: int | None = None, prefills: int = 1) -> Path:
    """vLLM-like decode: each step a named range execute_new_0_cached_N holding the host's input prep (a cpu op),
    one cudaGraphLaunch replaying `gemms` GEMM kernels and one elementwise kernel (no shapes), then
    cudaEventSynchronize on the sampled tokens; `host_us` of host work per step leaves the GPU idle between steps.
    The first `prefills` steps (execute_new_N_cached_0) run `prefill_gemms` GEMMs eagerly, one aten::mm each, after
    an allocation the decode steps do not make."""
    ev, t, corr, ext = [], 0, 1000, 1
    for s in range(steps):
        prefill = s < prefills
        name = f"execute_new_{sequences if prefill else 0}_cached_{0 if prefill else sequences}"
        start = t
        ev.append(op("aten::copy_", t, t + host_us * US, ext))
        ev.append(call("cudaLaunchKernel", t + (host_us - 10) * US, t + (host_us - 5) * US, corr, ext))
        k = t + host_us * US
        ev.append(gpu(ELEMENTWISE, k, k + 5 * US, corr))
        k += 6 * US
        corr, ext = corr + 1, ext + 1
        g = t + host_us * US
        if prefill and prefill_gemms is not None:
            # a prefill: an allocation, one aten::mm per GEMM, and a piecewise graph's replay among them
            ev.append(call("cudaMalloc", g, g + 15 * US))
            ev.append(call("cudaGraphLaunch", g + 16 * US, g + 19 * US, corr))
            ev.append(gpu(GEMM, k, k + gemm_us * US, corr, **{"graph id": 2, "graph node id": 0}))
            k, g, corr = k + gemm_us * US + 2 * US, g + 20 * US, corr + 1
            for i in range(prefill_gemms):
                ev.append(op("aten::mm", g, g + 10 * US, ext))
                ev.append(call("cudaLaunchKernel", g + 2 * US, g + 8 * US, corr, ext))
                ev.append(gpu(GEMM, max(k, g + 9 * US), max(k, g + 9 * US) + gemm_us * US, corr))
                k = max(k, g + 9 * US) + gemm_us * US + 2 * US
                g, corr, ext = g + 12 * US, corr + 1, ext + 1
        else:
            ev.append(call("cudaGraphLaunch", g, g + 20 * US, corr))
            for i in range(gemms):
                ev.append(gpu(GEMM, k, k + gemm_us * US, corr, **{"graph id": 1, "graph node id": i}))
                k += gemm_us * US + 2 * US
            corr += 1
        sync_from = g + 30 * US
        ev.append(call("cudaEventSynchronize", sync_from, k + 5 * US))
        ev.append(op("aten::item", sync_from - 2 * US, k + 8 * US, ext))
        ext += 1
        t = k + 10 * US
        ev.append(annotation(name, start, t))
    return write(tmp_path / "engine.json.gz", document(ev))


def test_engine_step_names_give_new_and_running_requests():
    assert engine_batch("execute_new_0_cached_4") == (0, 4)
    assert engine_batch("execute_new_2_cached_2") == (2, 2)
    assert engine_batch("execute_context_0(0)_generation_4(4)") == (0, 4)
    assert engine_batch("ProfilerStep#3") is None


def test_a_gpu_bound_decode_of_four_sequences_in_graph_replays_is_said_memory_bound_not_unknown(tmp_path):
    """heldout-user17 gb10decode: 'Regime: unknown ... which roof holds them, arithmetic or bytes, is what the shapes
    would tell' and 'Next: capture one eager step (no CUDA graphs) with record_shapes=True' beside 10 decode steps of
    4 sequences, 99% busy, 95% of the kernel time in GEMMs."""
    a = analyze_file(engine_trace(tmp_path))
    assert a.verdict.regime is Regime.UNKNOWN       # the roofline's own verdict stays withheld: no shapes
    # record_shapes cannot reach the replays: the Health line does not offer it as the fix
    assert "record_shapes=True would cost only the ops outside the CUDA-graph replays" in health_line(a.health)
    assert a.decode is not None and a.decode.sequences == 4
    lines = five_lines(a)
    regime = next(x for x in lines if x.startswith("Regime:"))
    nxt = next(x for x in lines if x.startswith("Next:"))
    assert regime.startswith("Regime: memory-bound decode"), regime
    assert "a decode of 4 sequences" in regime and "GPU-bound" in regime
    assert "nothing else to decide by" not in regime
    assert "record_shapes" not in nxt and "ncu --set" not in nxt, nxt
    assert "max_num_seqs" in nxt
    assert a.next_experiment.kind in (Experiment.FEWER_BYTES, Experiment.REMOVE_SYNCS)
    assert serialize.report(a)["regime_detail"]["bound"] == "decode_memory"


def test_a_host_paced_engine_step_is_not_read_as_a_weight_bound_decode(tmp_path):
    """Steps whose GPU idles half their wall are paced by the host: the weights' bytes are not the limit."""
    a = analyze_file(engine_trace(tmp_path, host_us=2500))
    assert a.decode is None
    assert not next(x for x in five_lines(a) if x.startswith("Regime:")).startswith("Regime: memory-bound decode")


def test_a_big_batch_is_not_read_as_weights_read_for_a_few_rows(tmp_path):
    a = analyze_file(engine_trace(tmp_path, sequences=256))
    assert a.decode is None


def test_the_engines_per_step_token_sync_is_answered_with_its_async_scheduling_and_the_batch(tmp_path):
    """heldout-user17 gptoss3090a: 'remove or defer the syncs (event.synchronize(), cudaEventSynchronize): keep values
    and decisions on the device, read them once every N steps' for vLLM's per-step wait on its sampled tokens."""
    a = analyze_file(engine_trace(tmp_path))
    nxt = next(x for x in five_lines(a) if x.startswith("Next:"))
    assert a.next_experiment.kind is Experiment.REMOVE_SYNCS
    assert "async_scheduling=True" in nxt and "read them once every N steps" not in nxt, nxt
    assert "max_num_seqs" in nxt


def test_prefill_steps_longer_than_the_loop_are_set_apart_not_hidden_under_its_max(tmp_path):
    """heldout-user17 gptoss3090a: '17 steps ...: 12.5 ms per step (median; p90 12.7 ms, max 12.8 ms)' beside two
    prefill steps of 46.4 and 17.5 ms that no figure named."""
    a = analyze_file(engine_trace(tmp_path, prefill_gemms=25))
    measured = five_lines(a)[0]
    assert "step 0 (" in measured and "execute_new_4_cached_0" in measured and "set apart" in measured, measured


def test_a_busy_prefill_step_is_not_said_to_pay_set_up(tmp_path):
    """heldout-user17 gptoss3090b: 'step 1 (18.5 ms) paying set-up, kept apart' for a 3-prompt prefill step 87% busy:
    its extra length is its kernels' work, not a stall."""
    a = analyze_file(engine_trace(tmp_path, prefill_gemms=25, prefills=2))
    assert not a.steps.setup_steps
    assert "paying set-up" not in five_lines(a)[0]


def test_the_syncs_are_credited_with_the_recurring_host_work_not_the_one_time_set_up():
    """heldout-user17 gptoss3090a: 'its host work (41 stretches, ..., 15% of the span) leaves the GPU idle' under a
    sync Next, where 9 points of those 15 were the first calls of aten::sort and unified_attention (one-time set-up
    a warm-up takes out; deferring vLLM's per-step sync does not)."""
    from types import SimpleNamespace

    from tracetriage.analyzers.model.verdicts import Cause
    from tracetriage.analyzers.voice.warm_up import recurring_host_share
    a = SimpleNamespace(by_cause_ns={Cause.HOST_WORK: 40_000_000}, span_ns=275_000_000,
                        warmup=(SimpleNamespace(idle_us=18_700.0), SimpleNamespace(idle_us=6_000.0)))
    share, said = recurring_host_share(a)
    assert abs(share - 15_300_000 / 275_000_000) < 1e-9
    assert said == ", outside the one-time set-up"
    assert recurring_host_share(SimpleNamespace(by_cause_ns={Cause.HOST_WORK: 40_000_000}, span_ns=275_000_000,
                                                warmup=()))[1] == ""


def test_the_invariants_take_a_decodes_memory_bound_from_its_workload_not_its_costed_kernels(tmp_path):
    """gb10decode: its Next (fewer bytes: more sequences a step) rests on the decode's weights, read once a step, where
    no kernel is costed memory-bound (the replays record no shapes); any other fewer-bytes Next still needs some."""
    from tracetriage.analyzers.output import invariants
    out = serialize.report(analyze_file(engine_trace(tmp_path)))
    out["next_experiment"] = {**out["next_experiment"], "kind": "fewer_bytes", "whatif_lever": None}
    assert not any("no kernel time is memory-bound" in x for x in invariants.check(out))
    out["regime_detail"] = {**out["regime_detail"], "bound": "unknown"}
    assert any("no kernel time is memory-bound" in x for x in invariants.check(out))


def test_steps_busy_between_their_syncs_are_said_gpu_bound_without_an_engines_names(tmp_path):
    """heldout-user17 gptoss3090a: 'nothing else to decide by' where every steady step was 87-91% busy between its
    syncs and the span as a whole 79% (its cold first steps): GPU-bound is decidable from the steps, whatever roof."""
    import gzip
    import json
    doc = json.load(gzip.open(engine_trace(tmp_path)))
    for e in doc["traceEvents"]:
        if e.get("cat") == "user_annotation":
            e["name"] = "decode_step"         # no engine's names: no decode read from them
    a = analyze_file(write(tmp_path / "plain.json.gz", doc))
    assert a.decode is None
    regime = next(x for x in five_lines(a) if x.startswith("Regime:"))
    assert "nothing else to decide by" not in regime
    assert "so the steps are GPU-bound" in regime, regime
