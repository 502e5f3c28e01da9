"""Nothing a drill shows before grading gives its answer away: titles name no cause or regime, `drill list`,
`drill show` and the dashboard's Drills page name neither a toy timeline's smell nor a sample trace's file
name; the grade reveals the source."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

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


def test_a_shown_trace_is_a_copy_with_its_sidecar_renamed_and_made_again_when_the_sample_changes(tmp_path):
    import os

    src = tmp_path / "smell-x.json.gz"
    src.write_bytes(b"one")
    (tmp_path / "smell-x.meta.json").write_text(json.dumps({"trace": "smell-x.json.gz", "measurements": {}}))
    out = bank.shown_copy(src, "Z.json.gz")
    assert out.name == "Z.json.gz" and out.read_bytes() == b"one" and not os.path.samefile(src, out)
    assert json.loads((out.parent / "Z.meta.json").read_text())["trace"] == "Z.json.gz"
    src.write_bytes(b"two, longer")
    os.utime(src, (out.stat().st_mtime + 10, out.stat().st_mtime + 10))
    assert bank.shown_copy(src, "Z.json.gz").read_bytes() == b"two, longer"
