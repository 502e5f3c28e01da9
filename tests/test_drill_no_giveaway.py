"""Nothing a drill shows before grading gives its answer away: titles name no cause or regime, `drill list`,
`drill show` and the dashboard's Drills page name neither a toy timeline's smell nor a sample trace's file
name; the grade reveals the source."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from sweep import sweep
from tracetriage.cli import main
from tracetriage.drills import bank, grader
from tracetriage.drills.textmatch import reading, tables

DRILLS = bank.all_drills()
SMELL_WORDS = ("launch_overhead", "host_work", "synchronization", "data_transfer", "smell-", "probe-")


def _secrets(d) -> list[str]:
    """What would give the drill away: the toy's smell and mix, the sample trace's own file name."""
    out = []
    if d.generate:
        out += [d.generate["smell"], *(d.generate.get("mix") or {})]
    for t in (d.trace, d.after):
        if t:
            out.append(Path(t).name.split(".json")[0])
    return out


@pytest.mark.parametrize("d", [d for d in DRILLS if d.kind in ("idle_cause", "triage")], ids=lambda d: d.id)
def test_a_title_names_no_idle_cause(d):
    r = reading(d.title, tables("cause", "name"))
    assert not r.asserted, (d.title, r)


def test_drill_list_names_no_smell_and_no_trace_file(capsys):
    main(["drill", "list", "--json"])
    items = {i["id"]: i for i in json.loads(capsys.readouterr().out)}
    for d in DRILLS:
        text = json.dumps(items[d.id])
        assert not [s for s in _secrets(d) if s in text], (d.id, text)


@pytest.mark.parametrize("drill_id", ["M02.03-c", "M02.04-c", "M02.01-d", "M02.04-g"])
def test_drill_show_names_no_smell_and_no_trace_file(capsys, drill_id):
    d = bank.get(drill_id)
    main(["drill", "show", drill_id])
    out = capsys.readouterr().out.split("questions")[0]     # the questions list every cause by name
    assert not [s for s in _secrets(d) if s in out], out[:400]
    main(["drill", "show", drill_id, "--json"])
    info = json.loads(capsys.readouterr().out)
    assert Path(info["trace"]).name == f"{drill_id}.json.gz" and Path(info["trace"]).is_file()


def test_the_grade_reveals_the_source():
    d = bank.get("M02.03-c")
    r = grader.grade(d, {"cause": "synchronization"})
    assert r.notes[-1] == "The trace, now that it is graded: toy timeline: synchronization, medium, seed 13."


@pytest.mark.slow      # every drill's shown traces; the drill-show checks above stand for it
def test_the_dashboards_drill_page_names_no_smell():
    from tracetriage.dashboard import data

    for v in data.drills():
        d = bank.get(v.id)
        shown = " ".join([v.title, v.source, *[p.name for p in data.drill_traces(v.id)]])
        assert not [s for s in _secrets(d) if s in shown], (v.id, shown)


def _gz(doc: dict) -> bytes:
    import gzip

    return gzip.compress(json.dumps(doc).encode())


def _read_gz(path) -> dict:
    import gzip

    return json.loads(gzip.decompress(path.read_bytes()))


def test_a_shown_trace_is_a_copy_with_its_sidecar_renamed_and_made_again_when_the_sample_changes(tmp_path):
    import os

    src = tmp_path / "smell-x.json.gz"
    one = {"schemaVersion": 1, "traceEvents": [{"name": "one", "ph": "X"}]}
    src.write_bytes(_gz(one))
    (tmp_path / "smell-x.meta.json").write_text(json.dumps({"trace": "smell-x.json.gz", "measurements": {}}))
    out = bank.shown_copy(src, "Z.json.gz")
    assert out.name == "Z.json.gz" and _read_gz(out) == one and not os.path.samefile(src, out)
    assert json.loads((out.parent / "Z.meta.json").read_text())["trace"] == "Z.json.gz"
    two = {"schemaVersion": 1, "traceEvents": [{"name": "two, longer", "ph": "X"}]}
    src.write_bytes(_gz(two))
    os.utime(src, (out.stat().st_mtime + 10, out.stat().st_mtime + 10))
    assert _read_gz(bank.shown_copy(src, "Z.json.gz")) == two


@pytest.mark.parametrize("neutral", [False, True])
def test_a_shown_trace_carries_no_trace_name_even_where_it_keeps_its_ranges(tmp_path, neutral):
    """torch.profiler writes the path it exported to as traceName: `/tmp/.../generate-llama-b1-eager.json` says
    eager and batch 1 to a drill that asks which phase misses its target."""
    src = tmp_path / "generate-llama-b1-eager.json.gz"
    events = [{"name": "decode_step", "cat": "user_annotation", "ph": "X"}]
    src.write_bytes(_gz({"traceName": "/tmp/x/generate-llama-b1-eager.json", "traceEvents": events}))
    shown = _read_gz(bank.shown_copy(src, "Q.json.gz", neutral_ranges=neutral))
    assert "traceName" not in shown
    assert shown["traceEvents"][0]["name"] == ("range_1" if neutral else "decode_step")


@pytest.mark.parametrize("neutral", [False, True])
def test_a_shown_trace_keeps_the_text_of_every_event_it_does_not_rename(tmp_path, neutral):
    """Only the document's keys and the range events it renames are decoded: every other event is written back as
    the capture wrote it (torch's spacing, `1.500` µs), where decoding and encoding all of gpt-eager's ~190k events
    took ~3 s of the ~3.5 s a shown copy of it cost."""
    import gzip

    kernel = '{"ph": "X", "cat": "kernel", "name": "gemm", "ts": 1.500, "dur": 2.250, "args": {"stream": 7}}'
    rng = '{"ph": "X", "cat": "user_annotation", "name": "decode_step", "ts": 1.000, "dur": 9.000}'
    torchs = '{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "ts": 0.500, "dur": 9.500}'
    text = '{"traceName": "/tmp/x/gpt-eager.json", "schemaVersion": 1, "traceEvents": [%s, %s, %s]}' % (
        kernel, rng, torchs)
    src = tmp_path / "gpt-eager.json.gz"
    src.write_bytes(gzip.compress(text.encode()))
    shown = gzip.decompress(bank.shown_copy(src, "K.json.gz", neutral_ranges=neutral).read_bytes()).decode()
    assert kernel in shown and torchs in shown and "traceName" not in shown
    assert (rng in shown) is not neutral
    assert [e["name"] for e in json.loads(shown)["traceEvents"]] == [
        "gemm", "range_1" if neutral else "decode_step", "ProfilerStep#3"]


@pytest.mark.slow      # every bundled sample, copied as shown (a few seconds each on the loaded machine)
def test_no_sample_a_drill_shows_names_its_file_in_the_trace(tmp_path, monkeypatch):
    """Every bundled sample shown, as the drill shows it: nothing outside the events names the capture's file."""
    import gzip

    monkeypatch.setenv("TRACETRIAGE_CACHE_DIR", str(tmp_path))
    for d in [d for d in DRILLS if d.generate is None]:
        for p in (d.trace_path(), d.after_path()):
            if p is None:
                continue
            doc = json.loads(gzip.decompress(p.read_bytes()))
            head = json.dumps({k: v for k, v in doc.items() if k != "traceEvents"})
            assert "traceName" not in doc and not [s for s in _secrets(d) if s in head], (d.id, head[:300])


def test_a_shown_sidecar_keeps_what_the_analyzers_read_and_nothing_that_names_the_answer(tmp_path):
    src = tmp_path / "probe-host-dataloader.json.gz"
    src.write_bytes(_gz({"traceEvents": []}))
    side = {"name": "probe-host-dataloader", "trace": src.name, "workload": "probe_host_dataloader",
            "params": {"num_workers": 0}, "label": {"idle_cause": "host_work", "regime": "compute",
                                                    "about": "DataLoader(num_workers=0) decodes every batch"},
            "device": {"name": "NVIDIA H200"}, "timing_per_step": {"median_ms": 5.0},
            "measurements": {"weight_bytes": 10, "bytes_per_call": 20, "per_shape": {"mm": 1.0}}}
    (tmp_path / "probe-host-dataloader.meta.json").write_text(json.dumps(side))
    out = bank.shown_copy(src, "Q.json.gz")
    shown = json.loads((out.parent / "Q.meta.json").read_text())
    assert shown == {"trace": "Q.json.gz", "device": {"name": "NVIDIA H200"}, "timing_per_step": {"median_ms": 5.0},
                     "measurements": {"weight_bytes": 10, "bytes_per_call": 20}}
    # a byte-ledger drill asks for a call's bytes: it is shown none
    ledger = bank.shown_copy(src, "L.json.gz", asks_bytes=True)
    assert json.loads((ledger.parent / "L.meta.json").read_text())["measurements"] == {"weight_bytes": 10}


SHOWN_SAMPLES = [d for d in DRILLS if d.trace and d.generate is None]
# Each drill's shown copy is written once per session (~4 s of a core for a drill on the 4.5 MB gpt-eager trace): the
# fast suite checks one drill of each kind, the one on the smallest trace; the slow step every other one.
_BY_SIZE = sorted(SHOWN_SAMPLES, key=lambda d: (bank.REPO_ROOT / d.trace).stat().st_size, reverse=True)
_ONE_OF_EACH_KIND = list({d.kind: d for d in _BY_SIZE}.values())


@pytest.mark.parametrize("d", sweep(SHOWN_SAMPLES, _ONE_OF_EACH_KIND, ids=[d.id for d in SHOWN_SAMPLES]))
def test_no_shown_sidecar_names_the_label_or_the_workload(d):
    for p in (d.trace_path(), d.after_path()):
        if p is None:
            continue
        side = p.parent / (p.name.split(".json")[0] + ".meta.json")
        if side.exists():
            text = side.read_text()
            assert not {"label", "params", "workload", "name", "per_shape"} & set(json.loads(text)), text[:200]
            assert not [s for s in _secrets(d) if s in text], text[:200]


def test_a_toy_drills_trace_carries_no_trace_name_and_no_label_block():
    import gzip

    d = bank.get("M02.03-e")
    doc = json.loads(gzip.decompress(d.trace_path().read_bytes()))
    assert "traceName" not in doc and "tracetriage_generator" not in doc
    text = json.dumps({k: v for k, v in doc.items() if k != "traceEvents"})
    assert not [s for s in _secrets(d) if s in text]


def test_a_graded_note_never_names_a_sample_trace_that_other_drills_show():
    r = grader.grade(bank.get("M00.03-a"), {"per_token_ms": "17.6 ms"})
    assert r.notes[-1] == ("The trace, now that it is graded: a sample trace that 1 other drill shows too, so its "
                           "name stays hidden.")       # M02.02-a: the same trace, the prefill's questions
    r = grader.grade(bank.get("M01.04-a"), {"small_regime": "overhead"})
    assert r.notes[-1].endswith("a sample trace that 2 other drills show too, so its name stays hidden.")
    only = [d for d in DRILLS if d.generate is None and not bank.shared_with(d)][0]
    assert Path(only.trace).name in grader.grade(only, {}).notes[-1]


def test_the_readmes_example_report_is_of_a_trace_no_drill_shows():
    import re

    readme = (bank.REPO_ROOT / "README.md").read_text()
    shown = {t for d in DRILLS for t in (d.trace, d.after) if t}
    quoted = set(re.findall(r"tracetriage report (traces/\S+\.json\.gz)", readme))
    assert quoted and not quoted & shown, quoted & shown


@pytest.mark.parametrize("drill_id", ["M00.03-a", "M00.03-b"])
def test_the_floor_drill_shows_the_decode_ranges_but_not_the_prefill_wall_another_drill_asks_for(capsys, drill_id):
    main(["drill", "show", drill_id, "--json"])
    names = {r["name"] for r in json.loads(capsys.readouterr().out)["ranges"]}
    assert "decode_step" in names and "prefill" not in names


def test_no_drill_shows_a_trace_whose_answer_another_drills_key_gives_away():
    """Issue 34: a graded drill's key is known; no other drill may show the same trace and ask an answer of the
    same kind (its regime, idle cause, lever, per-token time, TTFT, a fusion's bytes, a pair's speedup)."""
    leaks = {d.id: bank.answered_elsewhere(d) for d in DRILLS if bank.answered_elsewhere(d)}
    assert not leaks, leaks


@pytest.mark.parametrize(("drill_id", "trace", "after", "other"), [
    # the bank before issue 34's re-pointing: one trace served up to six drills
    ("M00.01-a", "traces/gpt-eager.json.gz", None, "M00.03-a"),             # the lever
    ("M01.05-a", "traces/matmul-sweep-bf16.json.gz", None, None),           # no shape asked: free of M01.04
    ("M02.01-b", "traces/fixes/knobs/tf32_gemm--allow_tf32.json.gz", None, "M01.05-a"),   # regime, lever
    ("M01.08-c", "traces/softmax-naive.json.gz", "traces/chain-compile-large.json.gz", "M01.07-a"),  # the bytes
    ("M01.03-c", "traces/realworld/rmsnorm_swiglu_mid--before.json.gz", None, None),
])
def test_a_drill_pointed_at_another_drills_trace_is_caught_when_their_answers_meet(drill_id, trace, after, other):
    import dataclasses

    d = dataclasses.replace(bank.get(drill_id), trace=trace, after=after or bank.get(drill_id).after)
    found = {o.id for o in bank.all_drills() if o.id != d.id and bank.answers_about(d) & bank.answers_about(o)}
    assert found == ({other} if other else set()), found


def test_a_timer_drill_and_a_ledger_of_the_same_pair_answer_each_other():
    import dataclasses

    ledger = bank.get("M01.07-d")     # rmsnorm_swiglu_mid: before -> fuse
    timer = dataclasses.replace(bank.get("M01.03-a"), variants=("before", "fuse"))
    assert bank.answers_about(ledger) & bank.answers_about(timer)
    assert not bank.answers_about(ledger) & bank.answers_about(bank.get("M01.03-a"))   # fuse vs graphs: its own


def test_a_drill_re_pointed_to_an_older_sample_is_shown_the_new_one(tmp_path):
    import os

    old, new = tmp_path / "a.json.gz", tmp_path / "b.json.gz"
    new.write_bytes(_gz({"traceEvents": [{"name": "new"}]}))
    os.utime(new, (1_000_000, 1_000_000))         # the sample the drill now shows is older than the copy
    old.write_bytes(_gz({"traceEvents": [{"name": "old"}]}))
    bank.shown_copy(old, "R.json.gz")
    assert _read_gz(bank.shown_copy(new, "R.json.gz"))["traceEvents"][0]["name"] == "new"
