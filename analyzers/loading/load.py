"""Load a trace file: read -> decode -> assemble -> link, with the columnar cache around it.

    trace = load("traces/smell-sync-item.json.gz")

Each step is its own module and data flows one way through them; this module only runs them in order.
The decode step is the trace format's decoder (tracetriage.analyzers.loading.formats). A second load of an
unchanged file comes from the cache (tracetriage.analyzers.loading.cache).
"""
from __future__ import annotations

import errno
import gc
import mmap
import os
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from tracetriage.analyzers.loading import cache, forked, formats, side_inputs, streamed
from tracetriage.analyzers.loading.assemble import assemble
from tracetriage.analyzers.loading.link import link
from tracetriage.analyzers.loading.read import forget_read_ahead, parsed_ahead, read_bytes
from tracetriage.analyzers.model.trace import EVENT_COLUMNS, Trace, TraceError

# A decoded text this long is freed beside the rest of the load: its pages go back to the system in a thread of their
# own, without the GIL (eventscan.release), while assemble and link go on. Freed in line, a 293 MB text's pages took
# 20-24 ms of the read-ahead thread between decode and assemble (the report's one-core stretch: the other core waits)
FREE_BESIDE_BYTES = 32 << 20


def load(path: str | os.PathLike, *, use_cache: bool = True, progress=None) -> Trace:
    """Load and link one trace file. Raises TraceError with a one-line message.

    A second load of an unchanged file comes from the columnar cache (tracetriage.analyzers.loading.cache).
    """
    path = Path(path)
    if not path.exists():
        raise TraceError(_missing(path))
    if path.is_dir():
        raise TraceError(f"{path} is a directory; pass one trace file (`tracetriage report DIR` reads ranks)")
    if not path.is_file():  # a FIFO would block the read forever, a device never end it
        raise TraceError(f"{path} is not a regular file; pass a trace file (.json or .json.gz)")
    if use_cache:
        hit = cache.get(path)
        if hit is not None:
            forget_read_ahead()    # (a command that read ahead for the JSON does not need it)
            return _with_side_inputs(hit)
    gc_was_on = gc.isenabled()
    gc.disable()  # millions of fresh objects, none of them in cycles: the cyclic GC only costs time
    try:
        trace = _parse(path, progress or (lambda stage: None))
    finally:
        if gc_was_on:
            gc.enable()
    if use_cache:
        cache.put_in_background(path, trace)
    return _with_side_inputs(trace)


def _missing(path: Path) -> str:
    """Why a path that does not exist cannot be read: a symbolic link that loops or leads nowhere is said as one
    (its target is there to fix), anything else is "no such file"."""
    if not path.is_symlink():
        return f"no such file: {path}"
    try:
        os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return f"{path} is a loop of symbolic links (each one points on to the next); point it at the trace file"
    return f"{path} is a symbolic link to {os.readlink(path)}, which does not exist"


def _with_side_inputs(trace: Trace) -> Trace:
    """The trace with what lies beside its file (measured ceilings, the capture's sidecar), read once here."""
    return replace(trace, side=side_inputs.read(trace.path, trace.device_name()))


def _parse(path: Path, progress) -> Trace:
    progress("read")
    parsed = parsed_ahead(path)       # (parsed in the read-ahead thread while the command imported its modules)
    if parsed is not None:
        return parsed
    return parse_text(path, [read_bytes(path, scan=True)], progress)


def parse_text(path: Path, box: list[bytearray], progress=lambda stage: None) -> Trace:
    """The trace of a file's text: decode -> assemble -> link. box: a list of the one text, taken from it here so that
    the caller holds no reference to it: the text (300 MB of a large trace) is freed once decoded, before assemble."""
    data = box.pop()
    progress("decode")
    try:
        parts = formats.decode(data, path)    # its format's decoder (tracetriage.analyzers.loading.decode)
    finally:
        streamed.forget()     # (the events a native scan read as the text arrived: the decoder's, if it took them)
    _free_beside(data)
    del data
    if not parts[0].has_trace_events:
        raise TraceError(f"{path}: JSON, but not a trace: no 'traceEvents' list; pass the .json or .json.gz "
                         "that torch.profiler exports")
    if sum(p.events_in_file for p in parts) == 0:
        raise TraceError(f"{path}: the trace has no events ('traceEvents' is empty): the profiler recorded "
                         "nothing; check that the workload ran inside the profiler's `with` block, then capture again")
    progress("link")
    assembled = assemble(parts, path)
    if len(assembled.ev) == 0:
        raise TraceError(f"{path}: none of its {_n(assembled.events_in_file, 'event')} is a complete event "
                         "(\"ph\": \"X\") with a usable ts and dur: nothing to analyse; capture the trace again")
    _free_columns_beside(parts, assembled)
    del parts
    return link(assembled)


def _free_beside(text: bytearray) -> None:
    """Hand a large decoded text's pages back to the system in a thread of its own (the caller drops its name for it
    next, and the thread's is then the last: the text is freed there, its pages already gone). Only a text no one else
    holds (the caller's name, this call's and getrefcount's own): its bytes read as zeros after (a text the caller was
    given to keep, a test's, is left as it is). Nothing where the scan was not built."""
    release = getattr(streamed.eventscan, "release", None)
    if release is None or len(text) < FREE_BESIDE_BYTES or sys.getrefcount(text) > 3:
        return
    forked.beside(lambda: release(text), "tracetriage free text")


def _free_columns_beside(parts: list, assembled) -> None:
    """The memory maps a streamed scan wrote the parts' columns into (a 293 MB trace's: ~150 MB of pages, whose unmap
    took 9-14 ms of the read-ahead thread before link), handed back in a thread of their own, as the text is: assemble
    gathered every column into arrays of its own, so no one reads them again. Not where an assembled column shares
    their memory (then nothing is released)."""
    release = getattr(streamed.eventscan, "release", None)
    if release is None:
        return
    maps: dict[int, mmap.mmap] = {}
    for part in parts:
        for column in part.cols.values():
            owner = column
            while isinstance(owner, np.ndarray):
                owner = owner.base
            if isinstance(owner, memoryview):      # (np.frombuffer's base: a view of the map)
                owner = owner.obj
            if isinstance(owner, mmap.mmap):
                maps[id(owner)] = owner
    if not maps:
        return
    views = [np.frombuffer(m, np.uint8) for m in maps.values()]
    if any(np.may_share_memory(getattr(assembled.ev, k), v) for k in EVENT_COLUMNS for v in views):
        return
    del views
    forked.beside(lambda: [release(m) for m in maps.values()], "tracetriage free columns")


def _n(count: int, one: str, many: str | None = None) -> str:
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


def find_traces(directory: Path) -> list[Path]:
    """The trace files directly inside a directory, by name (tracetriage.analyzers.loading.formats.is_trace_name)."""
    return sorted(p for p in directory.iterdir() if p.is_file() and formats.is_trace_name(p.name))
