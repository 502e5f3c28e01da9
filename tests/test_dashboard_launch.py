"""`tracetriage dashboard`: the streamlit command it runs and what it hands the app."""
from __future__ import annotations

import sys

import pytest

from tracetriage.dashboard import launch
from tracetriage.dashboard.library import PATH_ENV


def test_the_command_runs_streamlit_on_the_app_on_loopback_with_xsrf_the_upload_cap_and_port():
    cmd = launch.command(8765, headless_=True, upload_mb=500)
    # streamlit as a module, without the working directory on sys.path (tests/test_dashboard_cwd.py)
    assert cmd[:5] == [sys.executable, "-c", launch.NO_CWD_STREAMLIT, "run", str(launch.APP)]
    assert "sys.path.pop(0)" in launch.NO_CWD_STREAMLIT and "run_module('streamlit'" in launch.NO_CWD_STREAMLIT
    flags = dict(zip(cmd[5::2], cmd[6::2]))
    assert flags["--server.address"] == "127.0.0.1"
    assert flags["--server.enableXsrfProtection"] == "true" and flags["--server.enableCORS"] == "true"
    assert flags["--server.headless"] == "true" and flags["--server.port"] == "8765"
    assert flags["--server.maxUploadSize"] == "500" and flags["--browser.gatherUsageStats"] == "false"


def test_host_names_the_address_to_listen_on():
    flags = dict(zip(*[iter(launch.command(8765, True, 500, host="0.0.0.0")[5:])] * 2))
    assert flags["--server.address"] == "0.0.0.0"


def _cli(*args, env=None):
    import os
    import subprocess

    return subprocess.run([sys.executable, "-m", "tracetriage", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_a_busy_port_is_one_line_and_exit_2():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = _cli("dashboard", "--port", str(port))
    assert r.returncode == 2
    assert r.stderr == f"error: port {port} is in use (another dashboard?); pick another with --port N\n"
    assert r.stdout == ""


def test_an_address_of_no_interface_here_is_one_line_and_exit_2():
    r = _cli("dashboard", "--host", "203.0.113.7", "--port", "8765")
    assert r.returncode == 2 and r.stderr == "error: 203.0.113.7 is no address of this machine (--host)\n"


def test_the_help_says_what_another_host_exposes(capsys):
    from tracetriage.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["dashboard", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "default 127.0.0.1, this machine only" in out and "to anyone who can reach it: no login" in out


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


def _non_loopback_address() -> str | None:
    """An IPv4 address of this machine other than loopback (where a LAN peer would connect), if it has one."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))           # (no packet is sent: a UDP connect only picks the route)
            addr = s.getsockname()[0]
        except OSError:
            return None
    return None if addr.startswith("127.") else addr


@pytest.mark.slow      # a real Streamlit server
def test_the_dashboard_listens_on_loopback_only_and_prints_no_network_url(tmp_path):
    import os
    import socket
    import subprocess
    import time
    import urllib.request

    from tracetriage.dashboard.browser import free_port

    port = free_port()
    log = tmp_path / "out.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "tracetriage", "dashboard", "--port", str(port)], stdout=out,
                                stderr=subprocess.STDOUT, env={**os.environ, "DISPLAY": ""})
    try:
        deadline = time.time() + 180
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                    assert r.read().strip() == b"ok"
                    break
            except OSError:
                time.sleep(0.2)
        else:
            raise AssertionError(log.read_text())
        other = _non_loopback_address()
        if other is not None:
            with socket.socket() as s, pytest.raises(OSError):
                s.settimeout(2)
                s.connect((other, port))
        time.sleep(0.5)
        printed = log.read_text()
        assert f"http://127.0.0.1:{port}" in printed and "Network URL" not in printed
    finally:
        proc.terminate()
        proc.wait(timeout=30)
