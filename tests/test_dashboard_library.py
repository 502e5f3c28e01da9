"""Where the dashboard's traces come from, and that a name can never reach outside its directory."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from dashboard import library
from dashboard.library import Entry, PathRefused, confine

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


def test_a_symlink_out_of_the_root_is_refused_and_not_listed(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret.json").write_text("{}")
    os.symlink(tmp_path / "secret.json", root / "link.json")
    (root / "real.json").write_text("{}")
    with pytest.raises(PathRefused, match="outside"):
        confine(root, "link.json")
    assert [e.name for e in library.directory_entries(root)] == ["real.json"]


def test_a_symlink_that_stays_inside_the_root_is_allowed(tmp_path):
    (tmp_path / "real.json").write_text("{}")
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
