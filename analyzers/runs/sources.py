"""The unit of work of `tracetriage report DIR`: one rank source, and where its bytes come from.

    sources = list_sources("s3://bucket/run-17")          # or a local directory, or file://, memory://
    with local_copy(sources[0]) as (path, copied):       # a local file the loader can read
        ...

A rank source is a file of a run (a local path or an fsspec URL) and, optionally, a selector
for one rank inside a merged multi-rank file. It is what the local process pool and the Dask
workers are handed, so it stays small: a few strings, never the trace. The worker that analyses
a source reads its bytes where it runs (local_copy). Local paths never import fsspec: the plain
report's budget is about a second, and fsspec alone costs 0.15 s to import.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from tracetriage.analyzers.loading.formats import SIDECAR_SUFFIX, is_trace_name, trace_stem
from tracetriage.analyzers.loading.load import find_traces
from tracetriage.analyzers.model.trace import TraceError

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_COPY_CHUNK = 16 << 20


def is_url(target: str) -> bool:
    """'s3://b/run', 'file:///data/run', 'memory://run' are URLs; 'traces/ddp' and 'C:\\runs' are not."""
    return bool(_URL.match(target))


@dataclass(frozen=True)
class RankSource:
    """One rank's trace: where to read it, how the user named it, and which rank inside it."""
    path: str                   # where a worker reads it: a local path (absolute when sent to a cluster) or a URL
    shown: str                  # as the user named it: what the report prints (its `trace.path`, its errors)
    member: str | None = None   # one rank inside a merged multi-rank file ("rank3" or "3"); None: the file

    @property
    def label(self) -> str:
        return self.shown if self.member is None else f"{self.shown}#{self.member}"

    @property
    def name(self) -> str:
        return Path(self.label).name

    @property
    def key(self) -> Path:
        """The key the merge (tracetriage.analyzers.analyses.ranks.merge) files this source's result under."""
        return Path(self.label)


# --- listing a run ---------------------------------------------------------------------------------

def list_sources(target: str, shown: str | None = None) -> list[RankSource]:
    """The rank sources of a run directory, in name order; TraceError with one line when there are none.

    `target` is where this process reads the directory, `shown` how the user named it (the client
    sends a cluster absolute paths, and the report still prints the user's own spelling)."""
    shown = target if shown is None else shown
    if is_url(target):
        sources = _list_url(target, shown)
    else:
        try:
            paths = find_traces(Path(target))
        except NotADirectoryError:
            raise TraceError(f"{shown} is a file, not a directory of rank traces") from None
        except OSError as e:
            raise TraceError(f"cannot read {shown}: {e.strerror or e}") from None
        sources = [RankSource(str(p), str(Path(shown) / p.name)) for p in paths]
    if not sources:
        raise TraceError(f"no traces in {shown} (expected rank*.json or rank*.json.gz files)")
    return sources


def _list_url(target: str, shown: str) -> list[RankSource]:
    fs, root = filesystem(target)
    try:
        if fs.isfile(root):
            raise TraceError(f"{shown} is a file, not a directory of rank traces: a URL names a run's directory "
                             "(copy one trace to a local path to report it alone)")
        entries = fs.ls(root, detail=True)
    except FileNotFoundError:
        raise TraceError(f"cannot read {shown}: no such directory") from None
    except OSError as e:
        raise TraceError(f"cannot read {shown}: {e.strerror or e}") from None
    names = sorted(os.path.basename(e["name"].rstrip("/")) for e in entries if e.get("type") == "file")
    return [RankSource(f"{target.rstrip('/')}/{n}", f"{shown.rstrip('/')}/{n}") for n in names if is_trace_name(n)]


def filesystem(url: str):
    """(fsspec filesystem, path inside it) for a URL; TraceError naming the package a missing backend needs."""
    import fsspec

    protocol = url.split("://", 1)[0]
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError:
        from fsspec.registry import known_implementations

        package = (known_implementations.get(protocol, {}).get("class", "").split(".")[0]
                   or f"an fsspec {protocol} backend")
        raise TraceError(f"reading {protocol}:// needs the {package} package, which is not installed here: "
                         f"pip install {package}") from None
    except ValueError as e:  # fsspec: "Protocol not known: foo"
        raise TraceError(f"cannot read {url}: {protocol}:// is no storage fsspec knows ({e})") from None


def _is_local(fs) -> bool:
    protocols = fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)
    return "file" in protocols


# --- reading one source where the worker runs ---------------------------------------------------------

@contextlib.contextmanager
def local_copy(source: RankSource) -> Iterator[tuple[str, bool]]:
    """(a local path holding the source's trace, whether it is a temporary copy).

    The loader reads local files (it sniffs gzip, checks the size against memory, forks a
    decoder over the bytes), so a remote source is streamed to this worker's temporary
    directory under its own file name (the five lines name the file) and removed afterwards.
    A local or file:// source is read in place."""
    path, copied = source.path, False
    tmp = None
    try:
        if is_url(path):
            fs, inner = filesystem(path)
            if _is_local(fs):
                path = inner
            else:
                tmp = tempfile.mkdtemp(prefix="tracetriage-rank-")
                path = _copy_with_side_files(fs, inner, tmp, source.shown)
                copied = True
        yield path, copied
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _copy_with_side_files(fs, inner: str, tmp: str, shown: str) -> str:
    """Copy the trace into `tmp` under its own name, with the files loading reads beside it
    (tracetriage.analyzers.loading.side_inputs: the capture's NAME.meta.json, measured ceilings.json): without
    them a remote rank would be judged against other peaks than the same file on disk."""
    name = os.path.basename(inner.rstrip("/")) or "rank.json"
    path = os.path.join(tmp, name)
    try:
        with fs.open(inner, "rb") as src, open(path, "wb") as dst:
            shutil.copyfileobj(src, dst, _COPY_CHUNK)
    except FileNotFoundError:
        raise TraceError(f"no such file: {shown}") from None
    except OSError as e:
        raise TraceError(f"cannot read {shown}: {e.strerror or e}") from None
    folder = inner.rstrip("/").rsplit("/", 1)[0]
    for side in _side_files(name):
        # cat_file, not open: a side file is a few kB, and every rank of the run reads the same one at once; some
        # filesystems hand each opener one shared file object (fsspec's memory filesystem does), so two ranks
        # streaming it on two threads each read half, one of them nothing
        try:
            data = fs.cat_file(f"{folder}/{side}")
        except OSError:  # absent or unreadable: loading skips such a file beside a local trace too
            continue
        with open(os.path.join(tmp, side), "wb") as dst:
            dst.write(data)
    return path


def _side_files(name: str) -> tuple[str, ...]:
    return (f"{trace_stem(name) or name}{SIDECAR_SUFFIX}", "ceilings.json")

