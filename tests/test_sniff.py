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


def test_a_trace_goes_by_json_or_json_gz_and_its_sidecar_and_manifest_do_not():
    from tracetriage.analyzers.loading.formats import is_trace_name, trace_stem

    assert [trace_stem(n) for n in ("rank0.json.gz", "rank0.json", "M02.04-c.json.gz", "run.gz", "run.txt")] == \
        ["rank0", "rank0", "M02.04-c", None, None]
    assert [is_trace_name(n) for n in ("a.json", "a.json.gz", "a.meta.json", "manifest.json", "a.gz")] == \
        [True, True, False, False, False]


def test_what_lies_beside_a_trace_is_found_by_its_stem(tmp_path):
    import json

    from tracetriage.analyzers.loading.generated_code import beside
    from tracetriage.analyzers.loading.load import find_traces
    from tracetriage.analyzers.loading.side_inputs import read_sidecar

    for name in ("run.json", "run.json.gz", "run.meta.json", "manifest.json", "notes.txt"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "run.meta.json").write_text(json.dumps({"trace": "run.json.gz", "iters": 3}))
    assert [p.name for p in find_traces(tmp_path)] == ["run.json", "run.json.gz"]
    assert read_sidecar(tmp_path / "run.json.gz") == {"trace": "run.json.gz", "iters": 3}
    assert read_sidecar(tmp_path / "run.json") is None           # the sidecar names the other file
    assert beside(tmp_path / "run.json.gz") == beside(tmp_path / "run.json") == tmp_path / "run.inductor"


def test_loading_decodes_a_text_with_its_formats_decoder():
    from tracetriage.analyzers.loading import formats

    assert formats.format_of(b'{"traceEvents": []}') is formats.FORMATS[0] is formats.CHROME_TRACE
    assert formats.sniff(b'  [{"ph": "X"}]') == formats.Sniff(True)
    assert formats.decode(b'{"traceEvents": [{"ph": "X", "name": "k", "ts": 1, "dur": 2}]}', Path("t.json"))[0] \
        .events_in_file == 1
