"""Set-up savings said for what they are: a warm-up's saving is the profile's length, not the workload's step; the
compile caches' advice names a cache that is hit already and what no cache removes (heldout-user17 r18compile,
graphbreak, compilecold)."""
from pathlib import Path
from types import SimpleNamespace

from tests.kineto_factory import annotation, document, write
from tracetriage.analyzers.analyses.compile_cache import CompileCache, find
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.cold_start import setup_bound_head, steady_after, where_cold
from tracetriage.analyzers.voice.report import five_lines
from tracetriage.analyzers.voice.warm_up import first_compile_warmup

TRACES = Path(__file__).resolve().parent.parent / "traces"
MS = 1_000_000


def test_a_warm_ups_saving_is_said_as_the_profiles_length_beside_the_steady_step_it_leaves():
    """heldout-user17 r18compile: 'warm up first ... (predicted −56% of the traced span, 53.7 ms → 23.9 ms)', read as
    a speed-up while the 5.09 ms steady step does not change."""
    a = analyze_file(TRACES / "script-toy-train.json.gz")
    nxt = next(x for x in five_lines(a) if x.startswith("Next:"))
    assert nxt.startswith("Next: warm up first"), nxt
    assert "the profile's length, not the workload's, whose steady step (2.68 ms) a warm-up leaves as it is" in nxt


def test_compile_cache_hits_and_dynamos_own_time_are_read_from_the_dynamo_timed_ranges(tmp_path):
    ev = [annotation("bytecode_tracing (dynamo_timed)", 0, 400 * MS),
          annotation("build_guards (dynamo_timed)", 390 * MS, 500 * MS),
          annotation("AOTAutogradCache.inductor_load (dynamo_timed)", 600 * MS, 667 * MS)]
    c = find(load(write(tmp_path / "c.json.gz", document(ev))))
    assert c == CompileCache(hits=1, hit_ns=67 * MS, dynamo_ns=500 * MS)


def test_a_cache_hit_already_is_not_answered_with_turning_the_cache_on():
    """heldout-user17 compilecold: 'TORCHINDUCTOR_FX_GRAPH_CACHE=1' beside resnet18's AOTAutogradCache.inductor_load
    (a 67 ms hit), the caching credited with the cold start's Dynamo tracing and guards."""
    words = first_compile_warmup(SimpleNamespace(compile_cache=CompileCache(hits=1, hit_ns=67 * MS,
                                                                             dynamo_ns=530 * MS)))
    assert "TORCHINDUCTOR_FX_GRAPH_CACHE=1" not in words
    assert "caches are on already" in words and "never Dynamo's own bytecode tracing and guard building" in words
    assert "TORCHINDUCTOR_FX_GRAPH_CACHE=1" in first_compile_warmup(SimpleNamespace(compile_cache=None))


def _steps(*spec):
    """Steps as (regular, setup) pairs, in order."""
    return SimpleNamespace(steps=tuple(SimpleNamespace(index=i, regular=r, setup=s,
                                                       idle_by_cause_ns={Cause.LAUNCH_OVERHEAD: 1_000_000})
                                       for i, (r, s) in enumerate(spec)),
                           setup_steps=tuple(SimpleNamespace(index=i) for i, (_, s) in enumerate(spec) if s))


def test_a_cold_start_in_the_first_profiled_step_is_not_placed_before_the_loop():
    """heldout-user17 graphbreak: 'a cold start before the loop holds 59%' where the one-time cost was the first
    profiled iteration (lazy loading, first AccumulateGrad); the compile ran before the profile."""
    assert where_cold(SimpleNamespace(steps=_steps((True, True), (True, False), (True, False)))) == \
        " in the loop's first profiled step"
    assert where_cold(SimpleNamespace(steps=_steps((False, False), (True, True), (True, False)))) == \
        " before the loop and in the loop's first profiled step"
    assert where_cold(SimpleNamespace(steps=None)) == " before the loop"


def test_a_set_up_bound_head_does_not_deny_launch_overhead_where_the_steady_steps_idle():
    """heldout-user17 r18compile: 'set-up-bound (a cold start), not launch overhead' beside steady steps idling 36%
    of each, all of it launch overhead."""
    a = SimpleNamespace(steps=_steps((True, True), (True, False), (True, False)))
    assert "not launch overhead" not in setup_bound_head(a, 0.35)
    assert steady_after(a, 0.35) == ("; the steady steps after it idle 35% of each (median), mostly launch overhead, "
                                     "which a warm-up leaves")
    assert setup_bound_head(a, 0.05) == "set-up-bound (a cold start), not launch overhead"
    assert steady_after(a, 0.05) == ""
