"""Where the dashboard's traces come from: the bundled samples (and their multi-rank runs), the user's
directory, uploads.

A trace is always named relative to a root directory and opened only after
`confine()` has checked that the resolved path (symlinks followed) stays inside
that root: a name from a URL or a widget can never reach another file. A file is
listed when its content is a trace (tracetriage.analyzers.loading.sniff), whatever its extension
says: measured ceilings, a manifest or a sidecar beside the traces are not.
No streamlit here, so the rules are tested directly.
"""
from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from tracetriage.analyzers.loading.formats import trace_stem
from tracetriage.analyzers.loading.sniff import Sniff, sniff

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
        """How the URL names it (?trace=KEY): 'samples/gpt-eager.json.gz', 'directory/rank0.json.gz'."""
        return f"{self.source}/{self.name}"

    @property
    def folder(self) -> str | None:
        """The samples' sub-folder it lies in ('ddp', 'fixes'), None at the top."""
        parent = Path(self.name).parent
        return None if parent == Path(".") else str(parent)


@dataclass(frozen=True)
class Run:
    """A directory of rank traces (tracetriage report DIR): a sample run or the command line's directory."""
    source: str        # "samples" | "directory"
    root: Path         # the directory its name is confined to
    name: str          # the run's directory relative to root ("." for the root itself)

    @property
    def key(self) -> str:
        """How the URL names it (?run=KEY): 'samples/ddp', 'directory/.'."""
        return f"{self.source}/{self.name}"

    @property
    def label(self) -> str:
        """Its directory's name ('ddp')."""
        return self.name if self.name != "." else self.root.name


def confine(root: Path, name: str) -> Path:
    """root/name, resolved, if it is inside root; PathRefused otherwise. The message names no server path:
    it may reach a page."""
    base = Path(root).resolve()
    if not name or "\x00" in name:
        raise PathRefused("an empty trace name")
    candidate = Path(name)
    if candidate.is_absolute():
        raise PathRefused(f"{name}: an absolute path; name a trace inside the library")
    full = (base / candidate).resolve()
    if not full.is_relative_to(base):
        raise PathRefused(f"{name}: outside the library")
    return full


@functools.lru_cache(maxsize=4096)
def _sniffed(path: str, mtime_ns: int, size: int) -> Sniff:
    return sniff(Path(path))


def content(path: Path) -> Sniff:
    """What the file's first bytes say it is, remembered per file version (a listing re-runs on every page)."""
    try:
        st = path.stat()
    except OSError:
        return Sniff(False)
    return _sniffed(str(path), st.st_mtime_ns, st.st_size)


def trace_files(directory: Path) -> list[Path]:
    """The trace files directly inside a directory, by name: JSON (gzipped or not) whose content is a trace."""
    try:
        files = sorted(p for p in Path(directory).iterdir()
                       if p.is_file() and trace_stem(p.name) is not None)
    except OSError:
        return []
    return [p for p in files if content(p).is_trace]


def is_run(directory: Path) -> bool:
    """A directory holding rank traces: at least one with a distributedInfo header, or with rankN in its name."""
    return any(content(p).has_rank or _RANK_IN_NAME.search(p.name) for p in trace_files(directory))


_RANK_IN_NAME = re.compile(r"rank[^0-9a-z]*\d+", re.IGNORECASE)   # (tracetriage.analyzers.analyses.ranks reads
                                                                   # the number)


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
    files = trace_files(root)
    out = [listed[p.name] for p in files if p.name in listed]
    out += [Entry("samples", root, p.name) for p in files if p.name not in listed]
    for sub in _subdirectories(root):      # the runs, the fix pairs, the captures kept in a folder of their own
        out += [Entry("samples", root, f"{sub.name}/{p.name}") for p in trace_files(sub)]
    return out


def _subdirectories(root: Path) -> list[Path]:
    return [d for d in sorted(root.iterdir()) if d.is_dir() and not d.is_symlink() and not d.name.startswith(".")]


def sample_runs(root: Path = SAMPLES) -> list[Run]:
    """The multi-rank runs among the samples: their subdirectories that hold rank traces."""
    if not root.is_dir():
        return []
    return [Run("samples", root, d.name) for d in _subdirectories(root) if is_run(d)]


def directory_entries(root: Path) -> list[Entry]:
    """Trace files directly inside root (not recursive), confined to it: a symlink out of it is left out."""
    out = []
    for p in trace_files(root):
        try:
            confine(root, p.name)
        except PathRefused:
            continue
        out.append(Entry("directory", root, p.name))
    return out


def directory_run(target: "Target") -> Run | None:
    """The command line's directory as a run, when it holds rank traces."""
    if target.root is None or target.first is not None or not is_run(target.root):
        return None
    return Run("directory", target.root, ".")


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
    if trace_stem(base) is None:      # a name a trace goes by, whatever the upload was called
        base += ".json"
    return base


def save_upload(directory: Path, filename: str, data: bytes) -> Entry:
    directory.mkdir(parents=True, exist_ok=True)
    name = upload_name(filename)
    path = confine(directory, name)
    path.write_bytes(data)
    return Entry("upload", directory, name)


def upload_entries(directory: Path) -> list[Entry]:
    """What was uploaded to this server (any file: an upload that is no trace shows the loader's error)."""
    try:
        files = sorted(p for p in directory.iterdir() if p.is_file())
    except OSError:
        return []
    return [Entry("upload", directory, p.name) for p in files]


def public_message(message: str, roots) -> str:
    """A loader's one-line message with the server's directories taken out: a page shows the name the
    library gives a file (the URL's), never where it lies on the server (an upload's temp folder)."""
    out = str(message)
    for root in sorted({str(Path(r).resolve()) for r in roots if r is not None}, key=len, reverse=True):
        out = out.replace(root + os.sep, "").replace(root, "the library")
    return out
