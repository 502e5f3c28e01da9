"""`tracetriage drill list/show/grade`, `predict`, `predictions`: what a user sees, and what is refused."""
from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tracetriage.analyzers.whatif.levers import LEVERS
from tracetriage.cli import main

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "traces"

RIGHT_SYNC = ('pattern = "a drain after every .item()"\ncause = "synchronization"\n'
              'experiment = "keep it on the device"\n')


@pytest.fixture
def db(tmp_path, monkeypatch):
    p = tmp_path / "log.sqlite3"
    monkeypatch.setenv("TRACETRIAGE_DB", str(p))
    return p


def _attempts(db: Path) -> int:
    if not db.exists():
        return 0
    return sqlite3.connect(db).execute("SELECT count(*) FROM attempts").fetchone()[0]


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_drill_list_json_names_every_drill(capsys):
    rc, out, _ = run(capsys, "drill", "list", "--json")
    items = json.loads(out)
    assert rc == 0 and len(items) >= 16
    assert {"id", "title", "lesson", "kind", "source"} <= set(items[0])


def test_drill_show_json_gives_a_trace_a_user_can_open(capsys):
    rc, out, _ = run(capsys, "drill", "show", "M02.03-b", "--json")
    info = json.loads(out)
    assert rc == 0 and Path(info["trace"]).is_file() and info["trace"].endswith("M02.03-b.json.gz")
    assert set(info["answer_keys"]) == {"pattern", "cause", "experiment"}


def test_drill_show_draws_the_timeline_without_giving_the_cause_away(capsys):
    rc, out, _ = run(capsys, "drill", "show", "M02.04-c")
    assert rc == 0
    assert "gpu0 stream 7" in out and "host thread" in out and "gpu idle" in out
    assert "░ the GPU idles most of the slice" in out
    assert "S synchronization" not in out
    assert "cause = ...   # launch_overhead | host_work | synchronization | data_transfer, or free text" in out


def test_drill_show_reveal_marks_gaps_by_cause(capsys):
    rc, out, _ = run(capsys, "drill", "show", "M02.04-c", "--reveal")
    idle_rows = [seg.split("\n")[0] for seg in out.split("gpu idle")[1:]]
    assert rc == 0 and "S synchronization" in out
    assert "s" in idle_rows[0] and "S" in idle_rows[1]   # whole span: thin drains; zoomed: a full one


def test_grade_json_has_a_score_parts_and_feedback_and_records_the_attempt(capsys, tmp_path, db):
    f = tmp_path / "a.toml"
    f.write_text(RIGHT_SYNC)
    rc, out, _ = run(capsys, "drill", "grade", "M02.04-c", "--answers", str(f), "--json")
    res = json.loads(out)
    assert rc == 0 and 0.8 <= res["score"] <= 1.0
    assert [p["part"] for p in res["parts"]] == ["pattern", "cause", "experiment"]
    assert all(p["feedback"] for p in res["parts"])
    assert _attempts(db) == 1 and res["attempt"] == 1


def test_grade_text_shows_each_part(capsys, tmp_path, db):
    f = tmp_path / "a.toml"
    f.write_text(RIGHT_SYNC)
    rc, out, _ = run(capsys, "drill", "grade", "M02.04-c", "--answers", str(f))
    assert rc == 0 and out.startswith("M02.04-c: 100/100")
    assert "cause          1.00 × 0.40  Right: synchronization." in out


@pytest.mark.parametrize("text, message", [
    ('cause = "sync\n', ", line 1: not valid TOML: "),
    ('cause = "sync"\n\ncauses = "launch"\n',
     ", line 3: unknown key 'causes' for drill M02.04-c (its keys: pattern, cause, experiment)"),
    ('cause = "sync"\npattern = 3\n', ", line 2: 'pattern' must be a string, not an integer"),
    ('[cause]\nname = "sync"\n', ", line 1: 'cause' must be a string, not a table"),
])
def test_a_malformed_answer_file_is_refused_with_its_line_and_nothing_is_recorded(capsys, tmp_path, db, text, message):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    rc, out, err = run(capsys, "drill", "grade", "M02.04-c", "--answers", str(f))
    assert rc == 2 and out == ""
    assert err.startswith(f"error: {f}{message}") and err.count("\n") == 1
    assert _attempts(db) == 0


def test_an_unknown_drill_is_refused_and_nothing_is_recorded(capsys, tmp_path, db):
    f = tmp_path / "a.toml"
    f.write_text(RIGHT_SYNC)
    rc, _, err = run(capsys, "drill", "grade", "M09.99-z", "--answers", str(f))
    assert rc == 2 and err.startswith("error: no drill 'M09.99-z'; the drills are: M00.01-a")
    assert _attempts(db) == 0


def test_a_wrong_number_type_names_the_line(capsys, tmp_path, db):
    f = tmp_path / "a.toml"
    f.write_text('speedup = "fast"\n')
    rc, _, err = run(capsys, "drill", "grade", "M01.08-a", "--answers", str(f))
    assert rc == 2 and err == (f"error: {f}, line 1: 'speedup' must hold a number (1.7, or with its unit: "
                               "\"0.79 PFLOP/s\"), not 'fast'\n")


def test_predict_then_predictions_measures_from_the_trace_and_calibrates(capsys, db):
    rc, out, _ = run(capsys, "predict", "span_ms", "12", "--why", "a quarter of the launches",
                     "--trace", str(TRACES / "chain-triton-small.json.gz"))
    assert rc == 0 and out.startswith("prediction 1 recorded: span_ms = 12 ms")
    rc, _, _ = run(capsys, "predict", "speedup", "3", "--why", "4x fewer launches",
                   "--baseline", str(TRACES / "chain-eager-small.json.gz"),
                   "--trace", str(TRACES / "chain-triton-small.json.gz"))
    rc, out, _ = run(capsys, "predictions", "--json")
    res = json.loads(out)
    measured = {p["quantity"]: p["measured"] for p in res["predictions"]}
    assert measured == {"span_ms": pytest.approx(10.738, abs=1e-3), "speedup": pytest.approx(1.7322, abs=1e-4)}
    assert res["calibration"]["measured"] == 2 and res["calibration"]["within_2x"] == 1.0
    assert res["calibration"]["median_ratio"] == pytest.approx((10.738 / 12 + 1.7322 / 3) / 2, abs=1e-3)


def test_predictions_measure_attaches_a_later_trace(capsys, db):
    run(capsys, "predict", "idle_share", "0.5", "--why", "launch-bound at 4K")
    rc, out, _ = run(capsys, "predictions", "--measure", "1", str(TRACES / "chain-eager-small.json.gz"), "--json")
    row = json.loads(out)["predictions"][0]
    assert rc == 0 and row["measured"] == pytest.approx(0.9588, abs=1e-4) and row["ratio"] == pytest.approx(1.9176)


@pytest.mark.parametrize("argv, message", [
    (["predict", "latency", "3", "--why", "x"], "error: unknown quantity 'latency'; one of: span_ms, idle_share"),
    (["predict", "span_ms", "soon", "--why", "x"], "error: the predicted value must be a number, got 'soon'"),
    (["predict", "span_ms", "3", "--why", "  "], "error: --why needs one sentence of reasoning"),
    (["predict", "speedup", "3", "--why", "x"], "error: a speedup is measured against a baseline"),
    (["predictions", "--measure", "7", "x.json.gz"], "error: no prediction 7 in "),
])
def test_bad_predictions_are_refused_in_one_line(capsys, db, argv, message):
    rc, _, err = run(capsys, *argv)
    assert rc == 2 and err.startswith(message) and err.count("\n") == 1


@pytest.mark.parametrize("argv", [
    ["drill", "list"], ["drill", "show", "M02.03-a"],
    ["predict", "span_ms", "3", "--why", "x"], ["predictions"],
])
def test_drill_and_predict_never_import_torch_triton_or_streamlit(tmp_path, argv):
    code = ("import sys; from tracetriage.cli import main; "
            f"rc = main({argv!r}); "
            "bad = [m for m in ('torch', 'triton', 'streamlit') if m in sys.modules]; "
            "print('IMPORTED', bad); sys.exit(rc)")
    env = {**__import__("os").environ, "TRACETRIAGE_DB": str(tmp_path / "log.sqlite3")}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert "IMPORTED []" in r.stdout


def test_drill_grade_never_imports_torch_triton_or_streamlit(tmp_path):
    f = tmp_path / "a.toml"
    f.write_text(RIGHT_SYNC)
    test_drill_and_predict_never_import_torch_triton_or_streamlit(
        tmp_path, ["drill", "grade", "M02.04-c", "--answers", str(f)])


# --- the quantities table: one table for the help, the errors and the JSON ------------------------------

@pytest.mark.parametrize("quantity, value, message", [
    ("idle_share", "1.5", "error: idle_share takes a value more than 0, at most 1; got 1.5 "
                          "(idle_share: the share of the span with no kernel running)\n"),
    ("span_ms", "0", "error: span_ms takes a value more than 0 (ms); got 0 "
                     "(span_ms: the GPU span of the trace (first to last GPU activity))\n"),
    ("kernels_2x_ratio", "-0.5", "error: kernels_2x_ratio takes a value more than 0; got -0.5 "),
    ("gbps", "nan", "error: gbps takes a value more than 0 (GB/s); got nan "),
    ("speedup", "inf", "error: speedup takes a value more than 0 (×); got inf "),
])
def test_a_value_outside_its_quantitys_range_is_refused_and_nothing_is_recorded(capsys, db, quantity, value, message):
    rc, out, err = run(capsys, "predict", quantity, value, "--why", "x", "--baseline", "b.json.gz")
    assert rc == 2 and out == "" and err.startswith(message) and err.count("\n") == 1, err
    rc, out, _ = run(capsys, "predictions", "--json")
    assert json.loads(out)["predictions"] == []


@pytest.mark.parametrize("quantity, value", [("idle_share", "1"), ("idle_share", "0.01"), ("kernels_2x_ratio", "1.2")])
def test_values_at_the_edges_of_a_range_are_recorded(capsys, db, quantity, value):
    rc, out, err = run(capsys, "predict", quantity, value, "--why", "x")
    assert rc == 0, err
    assert out.startswith(f"prediction 1 recorded: {quantity} = {value}")


def test_predict_help_and_its_error_list_the_same_quantities_with_unit_and_range(capsys, db):
    from tracetriage.drills.quantities import QUANTITIES

    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    help_text = capsys.readouterr().out
    rows = help_text.split("quantities:\n", 1)[1].splitlines()[1:]          # after the header row
    assert [r.split()[0] for r in rows] == list(QUANTITIES)
    assert any(re.fullmatch(r"\s+idle_share\s+-\s+more than 0, at most 1\s+"
                            r"the share of the span with no kernel running", r)
               for r in rows)
    assert any(r.split()[:2] == ["span_ms", "ms"] for r in rows)
    rc, _, err = run(capsys, "predict", "latency", "3", "--why", "x")
    listed = err.split("one of: ", 1)[1].split(" (tracetriage predict --help")[0].split(", ")
    assert listed == list(QUANTITIES) and len(listed) == 9 + len(LEVERS)   # nine of the trace, a ratio per lever


def test_the_lever_ratios_come_from_the_lever_registry(capsys, db):
    from types import SimpleNamespace

    from tracetriage.analyzers.whatif.levers import LEVERS
    from tracetriage.drills.quantities import QUANTITIES, lever_quantities

    fuse = SimpleNamespace(name="fuse", quantity="fuse_ratio")
    assert [(q.name, q.high) for q in lever_quantities([fuse])] == [("fuse_ratio", None)]
    assert [k for k in QUANTITIES if k.endswith("_ratio")] == [spec.quantity for spec in LEVERS.values()]
    rc, out, _ = run(capsys, "predictions", "--json")
    table = json.loads(out)["quantities"]
    assert table["idle_share"] == {"unit": "", "doc": "the share of the span with no kernel running",
                                   "range": "more than 0, at most 1"}
    assert set(table) == set(QUANTITIES)


# --- drill list: never cut --------------------------------------------------------------------------------

def _trace_cells(out: str) -> dict[str, str]:
    """drill id -> its trace cell, the table's folded lines joined (a fold or a wrap drops no character but the
    space it broke at)."""
    cells: dict[str, str] = {}
    current = None
    for line in out.splitlines():
        if not line.startswith("│"):
            continue
        _, drill_id, _, _, trace, _ = line.split("│")
        current = drill_id.strip() or current
        cells[current] = cells.get(current, "") + trace.strip()
    return cells


def test_drill_list_piped_prints_every_trace_name_whole(capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    from tracetriage.drills import bank

    rc, out, _ = run(capsys, "drill", "list")
    assert rc == 0 and "…" not in out
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.startswith("│")}
    for d in bank.all_drills():
        assert d.source() in rows[d.id], d.id          # on its drill's own line, uncut


def test_drill_list_fits_columns_and_folds_instead_of_cutting(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    from tracetriage.drills import bank

    rc, out, _ = run(capsys, "drill", "list")
    assert rc == 0 and "…" not in out
    assert max(len(line) for line in out.splitlines()) <= 60
    cells = {k: v.replace(" ", "") for k, v in _trace_cells(out).items()}
    assert cells == {d.id: d.source().replace(" ", "") for d in bank.all_drills()}


def test_a_share_predicted_in_percent_is_refused_with_the_fraction_it_meant(capsys, db):
    rc, out, err = run(capsys, "predict", "idle_share", "19", "--why", "x")
    assert rc == 2 and err.endswith("a share is a fraction of 1, did you mean 0.19 (19%)?\n") and err.count("\n") == 1


def test_a_drill_asks_for_a_prediction_first_and_the_grade_reads_it_from_the_log(capsys, tmp_path, db):
    rc, out, _ = run(capsys, "drill", "show", "M02.04-c", "--json")
    info = json.loads(out)
    assert info["predict_first"] == "idle_share"
    rc, out, _ = run(capsys, "drill", "show", "M02.04-c")
    assert f"tracetriage predict idle_share VALUE --why \"...\" --trace {info['trace']}" in out
    f = tmp_path / "a.toml"
    f.write_text(RIGHT_SYNC)
    rc, out, _ = run(capsys, "drill", "grade", "M02.04-c", "--answers", str(f), "--json")
    assert json.loads(out)["prediction"]["predicted"] is None
    assert "No prediction recorded before this answer" in json.loads(out)["notes"][-1]
    run(capsys, "predict", "idle_share", "0.2", "--why", "the drains after each .item()", "--trace", info["trace"])
    rc, out, _ = run(capsys, "drill", "grade", "M02.04-c", "--answers", str(f), "--json")
    p = json.loads(out)["prediction"]
    assert p["predicted"] == 0.2 and p["measured"] == pytest.approx(0.19, abs=0.01)
    assert json.loads(out)["notes"][-1].startswith("Your prediction first: idle_share = 0.2; the trace measures 0.189")


def test_lines_and_ops_named_by_their_numbers_are_read_as_the_template_allows(tmp_path, capsys):
    """M01.01's template asks for "their numbers or line_N names": `views = [4]` and `hurts = 3` are answers, not
    a bad file (a blind student's file was refused with "'views' must be a string or a list of strings")."""
    a = tmp_path / "a.toml"
    a.write_text('new_bytes = "193 MB"\nviews = [4]\nhurts = 3\n')
    assert main(["drill", "grade", "M01.01-a", "--answers", str(a)]) == 0
    out = capsys.readouterr().out
    assert "views          1.00" in out and "hurts          1.00" in out, out


@pytest.mark.parametrize("verdict, credit, capped", [
    ("the lever, or maybe a sideshow", "0.50", False),      # leans to the key
    ("the lever or a sideshow", "0.40", True),              # an even hedge: capped as a wrong verdict
])
def test_a_ladder_verdict_hedge_earns_what_a_hedge_earns_in_every_other_drill(tmp_path, capsys, verdict, credit,
                                                                              capped):
    """Issue 37: the ladder's answers are read as the others are; a verdict hedged with the key earned 0 here while
    every other drill's hedge earns 0.4 (and caps) or 0.5 leaning to the key."""
    a = tmp_path / "a.toml"
    a.write_text(f'occupancy_pct = "3%"\nachieved = "595 GB/s"\nverdict = "{verdict}"\n')
    assert main(["drill", "grade", "M03.01-b", "--answers", str(a)]) == 0
    out = capsys.readouterr().out
    assert f"verdict        {credit}" in out, out
    assert ("capped" in out.lower()) == capped, out
