"""analyzers.tools.corpus: the table of other people's traces, checked against what was read on them."""
from pathlib import Path

import other_peoples_traces as opt
from analyzers.tools import corpus
from kineto_factory import write


def test_readings_file_names_a_source_and_a_verdict_for_every_trace():
    readings = corpus.load_readings()
    assert len(readings) >= 25
    for name, r in readings.items():
        assert r["source"] and r["path"].count("@") == 1, name     # repository@commit:path, no contents
        assert r["reading"] and r["expected_dominant"] and r["expected_regime"], name


def test_runner_reports_each_trace_and_says_where_the_verdict_differs_from_the_reading(tmp_path):
    write(tmp_path / "setup.json", opt.setup_in_a_launch_call())
    write(tmp_path / "uncosted.json", opt.uncosted_kernels())
    readings = {
        "setup.json": {"source": "test", "expected_dominant": "host_work", "expected_regime": "overhead"},
        "uncosted.json": {"source": "test", "expected_dominant": "negligible", "expected_regime": "memory",
                          "why_not": "read wrong on purpose"},
    }
    rows = {r.file: r for r in corpus.run(tmp_path, readings)}
    assert rows["setup.json"].matches == "yes" and rows["setup.json"].events > 0
    assert rows["uncosted.json"].matches == "no"
    assert rows["uncosted.json"].why_not == "regime unknown, read memory (read wrong on purpose)"
    table = corpus.markdown(list(rows.values()))
    assert "1 of 2 verdicts match the reading." in table
