"""Where the dashboard's traces come from: the bundled samples, the user's directory, uploads.

A trace is always named relative to a root directory and opened only after
`confine()` has checked that the resolved path (symlinks followed) stays inside
that root: a name from a URL or a widget can never reach another file.
No streamlit here, so the rules are tested directly.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from analyzers.loading.load import find_traces

SAMPLES = Path(__file__).resolve().parent.parent / "traces"
DEFAULT_UPLOAD_MB = 500
PATH_ENV = "TRACETRIAGE_DASHBOARD_PATH"     # what `tracetriage dashboard TRACE_OR_DIR` was given
UPLOAD_ENV = "TRACETRIAGE_UPLOAD_MB"


class PathRefused(ValueError):
    """A trace name that resolves outside its root directory (../, an absolute path, a symlink out)."""


@dataclass(frozen=True)
class Entry:
    source: str        # "samples" | "directory" | "upload"
    root: Path         # the directory the name is confined to
    name: str          # relative to root
    about: str = ""
    idle_cause: str | None = None
    regime: str | None = None

    @property
    def key(self) -> str:
        return f"{self.source}/{self.name}"


def confine(root: Path, name: str) -> Path:
    """root/name, resolved, if it is a file inside root; PathRefused otherwise."""
    base = Path(root).resolve()
    if not name or "\x00" in name:
        raise PathRefused("an empty trace name")
    candidate = Path(name)
    if candidate.is_absolute():
        raise PathRefused(f"{name}: an absolute path; name a trace inside {base}")
    full = (base / candidate).resolve()
    if not full.is_relative_to(base):
        raise PathRefused(f"{name}: outside {base}")
    return full


def samples(root: Path = SAMPLES) -> list[Entry]:
    """The bundled sample traces with their manifest labels (files the manifest does not list come after)."""
    if not root.is_dir():
        return []
    try:
        manifest = json.loads((root / "manifest.json").read_text())
    except (OSError, ValueError):
        manifest = {}
    listed = {}
    for t in manifest.get("traces", []):
        lab = t.get("label") or {}
        if isinstance(t.get("file"), str):
            listed[t["file"]] = Entry("samples", root, t["file"], lab.get("about", ""), lab.get("idle_cause"),
                                      lab.get("regime"))
    out = [listed[p.name] for p in find_traces(root) if p.name in listed]
    out += [Entry("samples", root, p.name) for p in find_traces(root) if p.name not in listed]
    return out


def directory_entries(root: Path) -> list[Entry]:
    """Trace files directly inside root (not recursive), confined to it: a symlink out of it is left out."""
    out = []
    for p in find_traces(root):
        try:
            confine(root, p.name)
        except PathRefused:
            continue
        out.append(Entry("directory", root, p.name))
    return out


@dataclass(frozen=True)
class Target:
    """What the command line named: a directory to list, and a trace to open first (if a file was named)."""
    root: Path | None
    first: str | None


def target_from_env(environ=os.environ) -> Target:
    raw = environ.get(PATH_ENV)
    if not raw:
        return Target(None, None)
    p = Path(raw).resolve()
    if p.is_file():
        return Target(p.parent, p.name)
    if p.is_dir():
        return Target(p, None)
    return Target(None, None)


def upload_cap_mb(environ=os.environ) -> int:
    try:
        mb = int(environ.get(UPLOAD_ENV, DEFAULT_UPLOAD_MB))
    except ValueError:
        return DEFAULT_UPLOAD_MB
    return mb if mb > 0 else DEFAULT_UPLOAD_MB


_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def upload_name(filename: str) -> str:
    """A file name for an upload that cannot leave its directory: no separators, no leading dots."""
    base = _SAFE.sub("_", Path(filename.replace("\\", "/")).name).lstrip(".") or "upload"
    if not (base.endswith(".json") or base.endswith(".json.gz")):
        base += ".json"
    return base


def save_upload(directory: Path, filename: str, data: bytes) -> Entry:
    directory.mkdir(parents=True, exist_ok=True)
    name = upload_name(filename)
    path = confine(directory, name)
    path.write_bytes(data)
    return Entry("upload", directory, name)
