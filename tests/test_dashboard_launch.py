"""`tracetriage dashboard`: the streamlit command it runs and what it hands the app."""
from __future__ import annotations

import sys

import pytest

from dashboard import launch
from dashboard.library import PATH_ENV


def test_the_command_runs_streamlit_on_the_app_with_the_upload_cap_and_port():
    cmd = launch.command(8765, headless_=True, upload_mb=500)
    assert cmd[:5] == [sys.executable, "-m", "streamlit", "run", str(launch.APP)]
    flags = dict(zip(cmd[5::2], cmd[6::2]))
    assert flags["--server.headless"] == "true" and flags["--server.port"] == "8765"
    assert flags["--server.maxUploadSize"] == "500" and flags["--browser.gatherUsageStats"] == "false"


def test_headless_when_linux_has_no_display():
    assert launch.headless({}, "linux")
    assert not launch.headless({"DISPLAY": ":0"}, "linux")
    assert not launch.headless({"WAYLAND_DISPLAY": "wayland-0"}, "linux")
    assert not launch.headless({}, "darwin")


def test_the_target_reaches_the_app_resolved_in_the_environment(tmp_path):
    (tmp_path / "t.json").write_text("{}")
    (tmp_path / "sub").mkdir()
    env = launch.environment(str(tmp_path / "sub" / ".." / "t.json"), {"HOME": "/root"})
    assert env[PATH_ENV] == str((tmp_path / "t.json").resolve()) and env["HOME"] == "/root"
    assert PATH_ENV not in launch.environment(None, {PATH_ENV: "/stale"})


def test_a_missing_target_is_one_line_for_the_user(tmp_path):
    with pytest.raises(launch.LaunchError, match="no such file or directory"):
        launch.environment(str(tmp_path / "missing"))


def test_a_bad_port_is_refused_by_the_parser(capsys):
    from tracetriage.cli import build_parser

    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["dashboard", "--port", "99999"])
    assert e.value.code == 2
    assert "a port is 1 to 65535, got 99999" in capsys.readouterr().err
