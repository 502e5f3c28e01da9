"""Where the dashboard's traces come from, and that a name can never reach outside its directory."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tracetriage.dashboard import library
from tracetriage.dashboard.library import Entry, PathRefused, confine

SAMPLES = Path(__file__).resolve().parent.parent / "traces"


def test_a_name_inside_the_root_resolves_to_that_file(tmp_path):
    (tmp_path / "a.json").write_text("{}")
    assert confine(tmp_path, "a.json") == (tmp_path / "a.json").resolve()


@pytest.mark.parametrize("name", ["../secret.json", "sub/../../secret.json", "..", "/etc/passwd", ""])
def test_dot_dot_absolute_and_empty_names_are_refused(tmp_path, name):
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret.json").write_text("{}")
    with pytest.raises(PathRefused):
        confine(root, name)


TRACE_TEXT = '{"schemaVersion": 1, "traceEvents": []}'


def test_a_symlink_out_of_the_root_is_refused_and_not_listed(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret.json").write_text(TRACE_TEXT)
    os.symlink(tmp_path / "secret.json", root / "link.json")
    (root / "real.json").write_text(TRACE_TEXT)
    with pytest.raises(PathRefused, match="outside"):
        confine(root, "link.json")
    assert [e.name for e in library.directory_entries(root)] == ["real.json"]


def test_a_symlink_that_stays_inside_the_root_is_allowed(tmp_path):
    (tmp_path / "real.json").write_text(TRACE_TEXT)
    os.symlink(tmp_path / "real.json", tmp_path / "alias.json")
    assert confine(tmp_path, "alias.json") == (tmp_path / "real.json").resolve()


def test_an_upload_name_cannot_leave_its_folder(tmp_path):
    assert library.upload_name("../../etc/passwd") == "passwd.json"
    assert library.upload_name("..\\..\\x.json.gz") == "x.json.gz"
    assert library.upload_name("...") == "upload.json"
    e = library.save_upload(tmp_path, "../evil name.json", b"{}")
    assert e == Entry("upload", tmp_path, "evil_name.json") and (tmp_path / "evil_name.json").read_bytes() == b"{}"


def test_samples_carry_their_manifest_labels():
    s = {e.name: e for e in library.samples(SAMPLES)}
    assert s["smell-sync-item.json.gz"].idle_cause == "synchronization"
    assert s["gpt-eager.json.gz"].about
    assert "manifest.json" not in s and not any(n.endswith(".meta.json") for n in s)
    assert "ceilings.json" not in s and "measurements.json" not in s          # JSON, but no trace


def test_the_sample_runs_are_the_subdirectories_of_rank_traces_and_their_ranks_are_listed():
    assert [r.key for r in library.sample_runs(SAMPLES)] == ["samples/ddp", "samples/ddp-skewed"]   # not fixes/
    s = {e.key: e for e in library.samples(SAMPLES)}
    assert s["samples/ddp/rank1.json.gz"].folder == "ddp" and s["samples/gpt-eager.json.gz"].folder is None
    assert "samples/fixes/tiny_ops--cuda_graphs.json.gz" in s                   # every sub-folder's traces
    assert not any(k.endswith((".truth.json", "measured.json", "ceilings.json")) for k in s)
    assert library.confine(SAMPLES, "ddp/rank1.json.gz") == (SAMPLES / "ddp" / "rank1.json.gz").resolve()


def test_a_file_is_listed_by_its_content_not_its_extension(tmp_path):
    (tmp_path / "ceilings.json").write_text('{"device_name": "NVIDIA H200", "copy_gbps": {}}')
    (tmp_path / "list.json").write_text('[{"ph": "X", "name": "k", "ts": 1, "dur": 2}]')    # Chrome's array format
    (tmp_path / "numbers.json").write_text("[1, 2, 3]")
    (tmp_path / "gz-named-json.json").write_bytes((SAMPLES / "smell-host-sleep.json.gz").read_bytes())
    (tmp_path / "empty.json.gz").write_bytes(b"")
    (tmp_path / "notes.txt").write_text(TRACE_TEXT)
    assert [p.name for p in library.trace_files(tmp_path)] == ["gz-named-json.json", "list.json"]


def test_a_run_is_a_directory_with_a_rank_trace():
    from tracetriage.dashboard.library import Target

    assert library.is_run(SAMPLES / "ddp") and not library.is_run(SAMPLES / "fixes") and not library.is_run(SAMPLES)
    assert library.directory_run(Target(SAMPLES / "ddp", None)).key == "directory/."
    assert library.directory_run(Target(SAMPLES / "ddp", "rank0.json.gz")) is None     # a file was named


def test_messages_for_a_page_name_no_server_directory(tmp_path):
    with pytest.raises(PathRefused) as e:
        confine(tmp_path, "../x.json")
    assert str(tmp_path) not in str(e.value)
    up = tmp_path / "tracetriage-upload-abc"
    msg = f"{up}/mine.json: not a trace (no traceEvents)"
    assert library.public_message(msg, [up, None]) == "mine.json: not a trace (no traceEvents)"
    assert library.public_message(f"cannot read {up}", [up]) == "cannot read the library"


def test_the_command_line_target_is_a_directory_or_a_file_in_one(tmp_path):
    f = tmp_path / "t.json"
    f.write_text("{}")
    assert library.target_from_env({library.PATH_ENV: str(f)}) == library.Target(tmp_path.resolve(), "t.json")
    assert library.target_from_env({library.PATH_ENV: str(tmp_path)}) == library.Target(tmp_path.resolve(), None)
    assert library.target_from_env({}) == library.Target(None, None)


def test_the_upload_cap_defaults_to_500_mb_and_reads_the_environment():
    assert library.upload_cap_mb({}) == 500
    assert library.upload_cap_mb({library.UPLOAD_ENV: "2000"}) == 2000
    assert library.upload_cap_mb({library.UPLOAD_ENV: "lots"}) == 500
