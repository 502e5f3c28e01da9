"""A DataLoader's workers starting at the head of a profile are no warm-up's to remove (analyses.loader_start): each
epoch starts them again, so the Next keeps the workers (persistent_workers=True); a single-process loader has no
workers to start, and its cold first step is still a warm-up's."""
import claim_traces
import kineto_factory as kf
from tracetriage.analyzers.analyses.loader_start import start_ns
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file

MS = 1_000_000


def _path(tmp_path, iterator):
    return kf.write(tmp_path / f"{iterator}.json", claim_traces.a_loop_after_its_workers_start(iterator))


def test_the_start_runs_to_the_end_of_the_first_multi_process_fetch(tmp_path):
    assert 54 * MS < start_ns(load(_path(tmp_path, "_MultiProcessingDataLoaderIter"))) < 56 * MS
    assert start_ns(load(_path(tmp_path, "_SingleProcessDataLoaderIter"))) == 0


def test_workers_starting_are_kept_across_epochs_not_warmed_up(tmp_path):
    out = serialize.report(analyze_file(_path(tmp_path, "_MultiProcessingDataLoaderIter")))
    assert out["next_experiment"]["kind"] != "warm_up"
    assert "persistent_workers=True" in out["lines"][4] and "warm up" not in out["lines"][4]
    assert claims.check(out) == []


def test_a_single_process_loaders_cold_start_is_still_warmed_up(tmp_path):
    out = serialize.report(analyze_file(_path(tmp_path, "_SingleProcessDataLoaderIter")))
    assert out["next_experiment"]["kind"] == "warm_up"
    assert claims.check(out) == []
