"""A look at a file's first bytes says whether to list it as a trace (tracetriage.analyzers.loading.sniff)."""
import gzip
from pathlib import Path

from tracetriage.analyzers.loading.sniff import HEAD_BYTES, sniff

TRACES = Path(__file__).resolve().parent.parent / "traces"


def test_kineto_traces_sniff_as_traces_and_rank_traces_as_ranks():
    assert sniff(TRACES / "gpt-eager.json.gz").is_trace and not sniff(TRACES / "gpt-eager.json.gz").has_rank
    assert sniff(TRACES / "ddp" / "rank0.json.gz").has_rank


def test_json_that_is_no_trace_does_not(tmp_path):
    for name in ("ceilings.json", "manifest.json", "gpt-eager.meta.json"):
        assert not sniff(TRACES / name).is_trace, name
    (tmp_path / "x.json").write_bytes(b"\x1f\x8b not really gzip")
    assert not sniff(tmp_path / "x.json").is_trace
    assert not sniff(tmp_path / "missing.json").is_trace


def test_the_array_format_and_a_late_trace_events_key(tmp_path):
    (tmp_path / "a.json").write_text('\n [{"ph": "X", "name": "k"}]')
    assert sniff(tmp_path / "a.json").is_trace
    late = '{"meta": "' + "x" * (HEAD_BYTES + 10) + '", "traceEvents": []}'
    with gzip.open(tmp_path / "late.json.gz", "wt") as f:
        f.write(late)
    assert not sniff(tmp_path / "late.json.gz").is_trace       # past the head: not listed (the loader would read it)
