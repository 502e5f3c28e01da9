"""`tracetriage dashboard [TRACE_OR_DIR] [--port N] [--host ADDR]`: run the app under `streamlit run`.

Streamlit is imported by the child process only, so the CLI stays light. The trace
or directory reaches the app through an environment variable (no shell, no argv
parsing inside Streamlit), resolved to an absolute path first.

The dashboard has no login: it serves the traces of whoever started it to anyone who can
reach its port. So it listens on the loopback interface only (127.0.0.1) unless --host names
another address; cross-site request forgery protection stays on, uploads keep their cap, and a
port already taken is one line (`error: port N is in use`), not Streamlit's own exit.
"""
from __future__ import annotations

import errno
import importlib.util
import os
import socket
import subprocess
import sys
from pathlib import Path

from tracetriage.dashboard.library import PATH_ENV, upload_cap_mb

APP = Path(__file__).resolve().parent / "app.py"
LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 8501          # Streamlit's: the port a user's bookmark already names


class LaunchError(Exception):
    """Bad input for the dashboard command: one line for the user."""


def headless(environ=os.environ, platform: str = sys.platform) -> bool:
    """No display to open a browser on: a Linux box without X11 or Wayland (a server, CI, ssh)."""
    if platform.startswith("linux"):
        return not (environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"))
    return False


# `python -m streamlit` would put the working directory first on sys.path: an analyzers.py, drills.py or
# tracetriage.py in the user's project would then be imported in place of ours (and executed). The child
# drops that entry before Streamlit starts (as `python -P` does, which 3.10 lacks); app.py drops its own folder.
NO_CWD_STREAMLIT = ("import runpy, sys; sys.path.pop(0); sys.argv[0] = 'streamlit'; "
                    "runpy.run_module('streamlit', run_name='__main__', alter_sys=True)")


def command(port: int | None, headless_: bool, upload_mb: int, host: str = LOOPBACK) -> list[str]:
    cmd = [sys.executable, "-c", NO_CWD_STREAMLIT, "run", str(APP),
           "--server.address", host,
           "--server.headless", "true" if headless_ else "false",
           "--server.maxUploadSize", str(upload_mb),
           "--server.enableXsrfProtection", "true",
           "--server.enableCORS", "true",
           "--browser.gatherUsageStats", "false",
           "--client.toolbarMode", "minimal",
           "--server.fileWatcherType", "none"]
    if port is not None:
        cmd += ["--server.port", str(port)]
    return cmd


def check_port(host: str, port: int) -> None:
    """LaunchError when something already listens on host:port (Streamlit would exit 1 with its own words)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as the server binds: a closed port's TIME_WAIT
                                                                  # is free
        try:
            s.bind((host, port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise LaunchError(f"port {port} is in use (another dashboard?); pick another with --port N") from None
            if e.errno == errno.EADDRNOTAVAIL:
                raise LaunchError(f"{host} is no address of this machine (--host)") from None
            if e.errno == errno.EACCES:
                raise LaunchError(f"port {port} needs privileges this user lacks; pick one above 1023") from None
            raise LaunchError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None


def environment(target: str | None, environ=os.environ) -> dict:
    env = dict(environ)
    env.pop(PATH_ENV, None)
    if target is not None:
        p = Path(target)
        if not p.exists():
            raise LaunchError(f"no such file or directory: {target}")
        if not (p.is_file() or p.is_dir()):
            raise LaunchError(f"{target} is neither a trace file nor a directory")
        env[PATH_ENV] = str(p.resolve())
    return env


def run(target: str | None, port: int | None, host: str | None = None) -> int:
    env = environment(target)
    if importlib.util.find_spec("streamlit") is None:
        raise LaunchError("streamlit is not installed in this environment: pip install -e '.[dev]'")
    host = host or LOOPBACK
    port = port or DEFAULT_PORT
    check_port(host, port)
    cmd = command(port, headless(), upload_cap_mb(), host)
    if os.name == "posix":
        # Become the server: Ctrl-C and kill reach Streamlit itself, and no orphan outlives the command.
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(cmd[0], cmd, env)
    try:
        return subprocess.call(cmd, env=env)
    except KeyboardInterrupt:
        return 130
