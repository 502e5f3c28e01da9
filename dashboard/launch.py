"""`tracetriage dashboard [TRACE_OR_DIR] [--port N]`: run the app under `streamlit run`.

Streamlit is imported by the child process only, so the CLI stays light. The trace
or directory reaches the app through an environment variable (no shell, no argv
parsing inside Streamlit), resolved to an absolute path first.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from dashboard.library import PATH_ENV, upload_cap_mb

APP = Path(__file__).resolve().parent / "app.py"


class LaunchError(Exception):
    """Bad input for the dashboard command: one line for the user."""


def headless(environ=os.environ, platform: str = sys.platform) -> bool:
    """No display to open a browser on: a Linux box without X11 or Wayland (a server, CI, ssh)."""
    if platform.startswith("linux"):
        return not (environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"))
    return False


def command(port: int | None, headless_: bool, upload_mb: int) -> list[str]:
    cmd = [sys.executable, "-m", "streamlit", "run", str(APP),
           "--server.headless", "true" if headless_ else "false",
           "--server.maxUploadSize", str(upload_mb),
           "--browser.gatherUsageStats", "false",
           "--client.toolbarMode", "minimal",
           "--server.fileWatcherType", "none"]
    if port is not None:
        cmd += ["--server.port", str(port)]
    return cmd


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


def run(target: str | None, port: int | None) -> int:
    env = environment(target)
    if importlib.util.find_spec("streamlit") is None:
        raise LaunchError("streamlit is not installed in this environment: pip install -e '.[dev]'")
    cmd = command(port, headless(), upload_cap_mb())
    if os.name == "posix":
        # Become the server: Ctrl-C and kill reach Streamlit itself, and no orphan outlives the command.
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(cmd[0], cmd, env)
    try:
        return subprocess.call(cmd, env=env)
    except KeyboardInterrupt:
        return 130
