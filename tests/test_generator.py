"""The toy-timeline generator: the analyzers recover its label on every seed, and a mix's shares.

Each generated trace records the idle time its simulator meant for each smell
(`tracetriage_generator.intended_idle_us`); the analyzers, reading only the timeline, must name the
labelled smell as the dominant idle cause and split the idle time within 5 points of the intent.
Derandomized and bounded by count, like tests/test_fuzz.py.
"""
from __future__ import annotations

import gzip
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracetriage.drills.evidence import facts
from tracetriage.drills.generator import CONTROL, LEVELS, SMELLS, Spec, generate, write

_EXPLORE = int(os.environ.get("TRACETRIAGE_FUZZ_EXAMPLES", "0"))


def budget(n: int):
    return settings(max_examples=_EXPLORE or n, deadline=None, derandomize=not _EXPLORE, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch):
    monkeypatch.setenv("TRACETRIAGE_NO_CACHE", "1")


mix_st = st.one_of(
    st.none(),
    st.tuples(st.sampled_from(SMELLS), st.floats(0.05, 0.45)),   # a second smell with 5-45% of the idle time
)


@budget(40)
@given(smell=st.sampled_from(SMELLS + (CONTROL,)), level=st.sampled_from(LEVELS), seed=st.integers(0, 10_000),
       second=mix_st, flows=st.booleans(), sync_events=st.booleans())
@pytest.mark.slow      # a sweep of generated traces; the same-spec test stands for the generator
def test_analyzers_recover_the_generators_label(tmp_path, smell, level, seed, second, flows, sync_events):
    mix = ()
    if second and smell != CONTROL and second[0] != smell:
        mix = ((smell, 1.0 - second[1]), (second[0], second[1]))
    spec = Spec(smell, level, seed, mix, flows=flows, sync_events=sync_events)
    path = write(spec, tmp_path / "toy.json.gz")
    f = facts(path)
    if smell == CONTROL:
        assert f.idle_share < 0.02 and f.regime == "compute", (spec, f.idle_share, f.regime)
        return
    assert f.dominant == spec.label, (spec, f.cause_share)
    intended = json.loads(gzip.decompress(path.read_bytes()))["tracetriage_generator"]["intended_idle_us"]
    total = sum(intended.values())
    for cause, us in intended.items():
        measured = f.cause_share[cause] / f.idle_share
        assert abs(measured - us / total) < 0.05, (spec, cause, measured, us / total)


def test_the_same_spec_gives_the_same_bytes(tmp_path):
    spec = Spec("synchronization", "hard", 42, (("synchronization", 0.7), ("host_work", 0.3)))
    a = write(spec, tmp_path / "a.json.gz").read_bytes()
    b = write(spec, tmp_path / "b.json.gz").read_bytes()
    assert a == b
    assert write(Spec("synchronization", "hard", 43), tmp_path / "c.json.gz").read_bytes() != a


def test_generated_events_look_like_torch_profiler_exports():
    doc = generate(Spec("data_transfer", "medium", 1))
    cats = {e.get("cat") for e in doc["traceEvents"]}
    assert {"cpu_op", "cuda_runtime", "kernel", "gpu_memcpy", "cuda_sync", "ac2g", "user_annotation",
            "gpu_user_annotation"} <= cats
    names = {e["name"] for e in doc["traceEvents"]}
    assert {"cudaLaunchKernel", "cudaMemcpyAsync", "cudaStreamSynchronize", "Memcpy HtoD (Pageable -> Device)",
            "aten::to", "cudaDeviceSynchronize"} <= names
    assert doc["deviceProperties"][0]["name"] == "NVIDIA H200"
    launch = next(e for e in doc["traceEvents"] if e["name"] == "cudaLaunchKernel")
    kernel = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel"
                  and e["args"]["correlation"] == launch["args"]["correlation"])
    assert kernel["ts"] >= launch["ts"] and kernel["args"]["External id"] == launch["args"]["External id"]
    # noise: host threads that never launch anything
    assert len({e["tid"] for e in doc["traceEvents"] if e.get("cat") == "cpu_op"}) == 2


def test_a_sync_smell_names_item_as_the_caller(tmp_path):
    f = facts(write(Spec("synchronization", "easy", 3), tmp_path / "s.json.gz"))
    ev = f.cause_evidence["synchronization"]
    assert ev["sync_calls"][0]["name"] == "cudaStreamSynchronize"
    assert ev["called_from"][0] == "aten::item"


def test_an_unknown_smell_is_refused():
    with pytest.raises(ValueError, match="unknown smell 'slow'"):
        Spec("slow")


def test_flows_and_sync_events_can_be_left_out():
    doc = generate(Spec("synchronization", "easy", 1, flows=False, sync_events=False))
    cats = {e.get("cat") for e in doc["traceEvents"]}
    assert "ac2g" not in cats and "cuda_sync" not in cats and "kernel" in cats


def test_the_command_line_writes_a_mix(tmp_path, capsys):
    from tracetriage.drills.generator import main

    out = tmp_path / "t.json.gz"
    assert main(["host_work", "--level", "medium", "--seed", "4", "--mix", "host_work=0.7,data_transfer=0.3",
                 "-o", str(out)]) == 0
    assert capsys.readouterr().out == f"wrote {out}: host_work, medium, seed 4\n"
    assert facts(out).dominant == "host_work"
    assert main(["host_work", "--mix", "gpu=1", "-o", str(out)]) == 2
