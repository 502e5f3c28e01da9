"""Read a trace file's JSON text: the first step of loading (read -> decode -> assemble -> link).

The text is read as a stream of chunks (a .json.gz decompressed as it is read, gzip detected by its
magic, not by the name: tracetriage.analyzers.loading.formats.GZIP_MAGIC) into one growing buffer, and
each chunk is checked before the next is read:
- against the memory budget (tracetriage.analyzers.loading.memory): a file whose JSON would need more memory than
  there is is refused before it is read when its size says so, else as soon as its text passes the
  limit (a small .gz can hold a huge JSON, and its trailer's size field cannot be trusted to say so);
- for trace events: every event has a "ph" key, so NO_EVENT_BYTES of text without one is not a
  profiler trace (whitespace, padding, a gzip bomb) and is refused there, whatever the budget.
So a refusal costs bounded memory: the text read so far, never the whole of a huge one.

A command that will load one file starts its read early, in a thread (read_ahead), so that gunzip (which
releases the GIL: ~0.3 s for a 300 MB trace) runs on the second core while the analysis modules import (~0.2 s
holding it); read_bytes of that file then takes the thread's text, or raises what the thread raised. A trace
the cache holds is not read at all (the thread asks tracetriage.analyzers.loading.cache_key first). This module
imports no numpy, so the thread starts before numpy does. `report` has the thread parse the text as well where the
stream scanned it (decode, assemble and link, while the main thread still imports: read_ahead's parse, the load's own
parse_text, given by the caller: this module imports no later step), and load takes the trace (parsed_ahead).

A .gz read for the trace decoder (read_bytes(path, scan=True), and the read-ahead) is scanned as it arrives: the
gunzip writes the text straight into one buffer of the size the gzip trailer gives (python-isal's gzip reader, which
lets go of the GIL while it inflates), and the native scan reads each piece of events in a second thread while the
gunzip goes on (tracetriage.analyzers.loading.streamed); the decoder takes its columns. Whatever that read refuses (a
corrupt or truncated gzip, bytes after its last member, more text than the trailer said) is read again from the start
as any other .gz is, which reads it or says why in the words it always did.
"""
from __future__ import annotations

import os
import stat
import sys
import threading
from pathlib import Path

from tracetriage.analyzers.loading import cache_key, streamed
from tracetriage.analyzers.loading.formats import GZIP_MAGIC
from tracetriage.analyzers.loading.memory import CHECK_MIN_BYTES, read_limit, refuse_to_read, size_words
from tracetriage.analyzers.model.errors import TraceError

CHUNK_BYTES = 16 << 20          # JSON text read (or decompressed) per step: checked after each
GZ_INPUT_BYTES = 8 << 20        # compressed bytes fed to the decompressor per step
# ... which gives its text 1 MB at a time: a block that small is copied on while it is still in the cache, and
# malloc reuses its memory (16 MB blocks were each mapped and faulted in afresh): 15% less CPU for the gunzip
GZ_OUTPUT_BYTES = 1 << 20
# A streamed read (a large .gz scanned as it arrives) decompresses into its final buffer this much per call, without
# the GIL: the thread takes the GIL back once a block (a 1 MB block cost a wait for the GIL each while the modules
# import), and the scan reads each block while it is still in the cache
STREAM_BLOCK_BYTES = 4 << 20
EVENT_KEY = b'"ph"'
# The widest stretch of a real trace without an event is its head (deviceProperties) or one op's
# arguments: kilobytes. 128 MB without one is no trace, and refusing there bounds the memory spent.
NO_EVENT_BYTES = 128 << 20
# While the read-ahead runs beside the imports, the main thread holds the GIL for long stretches (an import runs Python
# for milliseconds on end), and a thread waiting for it gets it only once the holder is asked to let go: after the
# switch interval, 5 ms by default. The gunzip thread wants the GIL back after each 1 MB block (~2 ms of work without
# it), the scan after each 2 MB piece: at 5 ms, much of their time while the modules imported went in waiting.
# Narrowed for the read-ahead's time (a switch costs microseconds), and set back when its text is taken or forgotten.
# On the 293 MB benchmark trace (2 loaded cores, 4 interleaved pairs) the gunzip thread gets through 122 1 MB blocks on
# average while the modules import, against 77 at 5 ms; the whole report's gain is within the loaded machine's noise.
READ_AHEAD_SWITCH_S = 0.0005


class _ReadAhead:
    """One file's read in a thread: its text or what it raised, and a flag that stops it between chunks; with
    `parse`, the trace parsed from a text the stream scanned (or the TraceError that says why it is none)."""

    def __init__(self, path: Path, scan: bool, parse=None):
        self.path, self.stat, self.scan, self.parse = path, os.stat(path), scan, parse
        self.stop = threading.Event()
        self.text: bytearray | None = None
        self.error: BaseException | None = None
        self.parsed = None                     # (a Trace: this module imports no model)
        self.parse_error: TraceError | None = None
        self.streaming = threading.Event()     # the text is read by a streamed scan (set as its gunzip begins)
        self.read = threading.Event()          # the read is over (its text read, or not to be read: it raised...)
        self.thread = threading.Thread(target=self._run, name="tracetriage read-ahead", daemon=True)

    def _run(self) -> None:
        try:
            if cache_key.enabled() and cache_key.entry_path(self.path).exists():
                return       # the trace will come from the cache: no text to read (read_bytes reads, should it not)
            self.text = _read(self.path, self.stop, self.scan, self.streaming)
        except BaseException as e:  # (handed to the main thread, which raises it where it would have read)
            self.error = e
            return
        finally:
            self.read.set()
        if self.parse is not None and not self.stop.is_set() and streamed.scanned(self.text):
            self._parse()

    def _parse(self) -> None:
        """The rest of the load (decode, assemble, link) here, while the main thread imports the analyses: ~0.15 s of
        a 300 MB trace's, mostly numpy's (which lets go of the GIL). Only a text the stream scanned: its decode forks
        no child (msgspec's may, and a fork beside the main thread's imports could copy a lock held). The text is
        handed over in a box and dropped from here, so that it is freed before assemble as the main thread's load
        frees it. Anything but a TraceError (the trace's own fault, said in the words the load says it) leaves the
        parse to the main thread, from the text."""
        box = [self.text]
        self.text = None
        try:
            self.parsed = self.parse(self.path, box)
        except TraceError as e:
            self.parse_error = e
        except Exception:    # (not the trace's fault: the main thread loads it again, from this text if not taken)
            self.text = box[0] if box else None

    def same_file(self, path: Path) -> bool:
        try:
            st = os.stat(path)
        except OSError:
            return False
        return path == self.path and (st.st_ino, st.st_size, st.st_mtime_ns) == (
            self.stat.st_ino, self.stat.st_size, self.stat.st_mtime_ns)


class _Stopped(Exception):
    pass


_ahead: _ReadAhead | None = None
_switch_before: float | None = None       # the switch interval the read-ahead narrowed, to set back


def _narrow_switch() -> None:
    global _switch_before
    if _switch_before is None:
        _switch_before = sys.getswitchinterval()
        sys.setswitchinterval(min(_switch_before, READ_AHEAD_SWITCH_S))


def _restore_switch() -> None:
    global _switch_before
    if _switch_before is not None:
        sys.setswitchinterval(_switch_before)
        _switch_before = None


def read_ahead(path: Path, scan: bool = True, parse=None) -> bool:
    """Start reading `path` in a thread, for a read_bytes(path, scan) soon; nothing for what is not a regular file
    (read_bytes says why in its own time). parse: for a load of it soon (parsed_ahead), the load's own parse_text
    (path, [text]) -> Trace, run in the thread too where the stream scanned the text (a later step of the load: its
    caller's to give, this module imports none). Whether the thread started."""
    global _ahead
    forget_read_ahead()
    try:
        if not path.is_file():
            return False
        _ahead = _ReadAhead(path, scan, parse)
    except OSError:
        return False
    _ahead.thread.start()
    _narrow_switch()
    return True


def forget_read_ahead() -> None:
    """Stop a read-ahead whose text will not be asked for (the trace came from the cache), and free its text."""
    global _ahead
    ahead, _ahead = _ahead, None
    if ahead is not None:
        ahead.stop.set()
        ahead.thread.join()
    _restore_switch()
    streamed.forget()


def wait_for_streamed_read(path: Path) -> None:
    """Where the read-ahead of `path` reads it by a streamed scan and will parse it, wait until the read is over: its
    gunzip and scan want both cores, and the parse after it (decode, assemble, link) one. The caller (`report`) imports
    the analysis modules after this, beside the parse, where they slowed the gunzip and scan (the 293 MB benchmark
    trace: ~0.07 s of CPU of the report's modules and its words', ~0.09 s the parse's). Returns at once for any other
    read, and for one not yet streaming (its modules are better imported now)."""
    ahead = _ahead
    if ahead is None or ahead.parse is None or not ahead.streaming.is_set() or not ahead.same_file(path):
        return
    ahead.read.wait()


def parsed_ahead(path: Path):
    """The trace the read-ahead thread parsed from `path` (load.parse_text's), or None where it parsed none (read_bytes
    then reads the file, or takes the thread's text); raises the TraceError that said why the text is no trace."""
    global _ahead
    ahead = _ahead
    if ahead is None or ahead.parse is None or not ahead.same_file(path):
        return None
    ahead.thread.join()
    if ahead.parsed is None and ahead.parse_error is None:
        return None
    _ahead = None
    _restore_switch()
    if ahead.parse_error is not None:
        raise ahead.parse_error
    return ahead.parsed


def read_bytes(path: Path, scan: bool = False) -> bytearray:
    """The JSON text of a .json or .json.gz file, in a bytearray (decode() splits it in place). scan: the text is
    for the trace decoder, which takes the events the native scan read as the text arrived (streamed.take), if
    it did."""
    global _ahead
    ahead = _ahead
    if ahead is not None:
        if not ahead.same_file(path) or ahead.scan != scan:
            forget_read_ahead()     # (no thread of ours may run on when decode forks)
        else:
            _ahead = None
            ahead.thread.join()
            _restore_switch()
            if ahead.error is not None:
                raise ahead.error
            if ahead.text is not None:
                return ahead.text
    return _read(path, scan=scan)


def _read(path: Path, stop: threading.Event | None = None, scan: bool = False,
          streaming: threading.Event | None = None) -> bytearray:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # (before open: opening a FIFO would block)
            raise TraceError(f"{path} is not a regular file; pass a trace file (.json or .json.gz)")
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            gz = f.read(2) == GZIP_MAGIC
            f.seek(0)
            limit = None
            if gz or size >= CHECK_MIN_BYTES:  # (any .gz: a small one can hold a huge JSON)
                limit = read_limit()
                if not gz and size > limit:
                    raise refuse_to_read(path, size)
            if not gz:
                return _gather(_plain(f, size), path, limit, stop)
            stream = _stream_for(f, limit) if scan else None
            if stream is not None:
                if streaming is not None:
                    streaming.set()
                try:
                    text = _gather_streamed(f, path, limit, stop, stream)
                except _NotStreamed:
                    f.seek(0)           # (read again as below, which reads it or says why)
                else:
                    streamed.hand_over(text, stream)
                    return text
            return _gather(_gunzip(f, path), path, limit, stop)
    except IsADirectoryError:
        raise TraceError(f"{path} is a directory; pass a trace file") from None
    except OSError as e:
        raise TraceError(f"cannot read {path}: {e.strerror or e}") from None


def _stream_for(f, limit: int | None) -> streamed.Stream | None:
    """A streamed scan for a .gz's text, where the scan is there and the size its trailer gives (a hint) is one the
    stream pays for (streamed.MIN_BYTES) and the memory budget holds."""
    if not streamed.enabled():
        return None
    try:
        f.seek(-4, os.SEEK_END)
        hint = int.from_bytes(f.read(4), "little")      # ISIZE: the last member's size mod 2**32
        f.seek(0)
    except OSError:
        f.seek(0)
        return None
    if hint < streamed.MIN_BYTES or (limit is not None and hint > limit):
        return None
    try:
        return streamed.Stream(hint)
    except (OSError, MemoryError):   # (maps or a buffer the system refuses: the read after says what it can)
        return None


def _gather(source, path: Path, limit: int | None, stop: threading.Event | None = None) -> bytearray:
    """The text in one buffer, grown by `source` a piece at a time (glibc grows a big buffer with mremap,
    without copying it); each piece is checked against the limit and for an event before the next."""
    out = bytearray()
    _check_each_piece(source(out), out, path, limit, stop, lambda: len(out))
    return out


class _NotStreamed(Exception):
    """The streamed read stopped short of the text: a gzip its reader refuses (corrupt, truncated, bytes after the
    last member) or a text longer than its trailer said. The caller reads the file again the careful way."""


def _gather_streamed(f, path: Path, limit: int | None, stop: threading.Event | None,
                     stream: streamed.Stream) -> bytearray:
    """The text of a .gz, decompressed straight into the stream's buffer (its size the trailer's, so that nothing is
    copied or grown) STREAM_BLOCK_BYTES at a time, by python-isal's gzip reader (which lets go of the GIL while it
    inflates: the scan reads the blocks before on the other core), checked as _gather checks its pieces. Raises
    _NotStreamed where the reader refuses the file or the text does not fit: the careful read (_gunzip) then reads it
    or says why in its words, as it always did."""
    try:
        _check_each_piece(_inflate_into(f, stream), stream.text, path, limit, stop, lambda: stream.filled)
    except BaseException:
        stream.stop()
        raise
    stream.end()
    return stream.text


def _inflate_into(f, stream: streamed.Stream):
    from isal import isal_zlib

    # python-isal's C reader, a private name (isal>=1.6 has it): a release without it reads the careful way
    reader_class = getattr(isal_zlib, "_GzipReader", None)
    if reader_class is None:
        raise _NotStreamed
    reader = reader_class(f, GZ_INPUT_BYTES)
    text = stream.text
    unchecked = 0
    try:
        with memoryview(text) as whole:
            while stream.filled < len(text):
                # (never past the next check: a refusal lands where the read block by block lands it)
                n = min(STREAM_BLOCK_BYTES, CHUNK_BYTES - unchecked)
                with whole[stream.filled:stream.filled + n] as block:
                    n = reader.readinto(block)
                if not n:
                    break
                stream.wrote(n)
                unchecked += n
                if unchecked >= CHUNK_BYTES:
                    unchecked = 0
                    yield
        if stream.filled == len(text) and reader.readinto(bytearray(1)):
            raise _NotStreamed          # (more text than the trailer said: several members, or a trailer that lies)
    except (EOFError, OSError, isal_zlib.error):
        raise _NotStreamed from None     # (gzip.BadGzipFile is an OSError)
    if unchecked:
        yield


def _check_each_piece(pieces, out: bytearray, path: Path, limit: int | None, stop: threading.Event | None,
                      length) -> None:
    """After each piece `pieces` adds to out[:length()]: stop if asked, refuse past the limit or NO_EVENT_BYTES
    without an event."""
    after_event = 0                    # where the text after the last "ph" seen so far begins
    start = 0
    for _ in pieces:
        if stop is not None and stop.is_set():
            raise _Stopped
        end = length()
        if limit is not None and end > limit:
            raise refuse_to_read(path, limit, more=True)
        # rfind from the end: in a real trace it stops within a few hundred bytes
        i = out.rfind(EVENT_KEY, max(start - len(EVENT_KEY) + 1, 0), end)
        if i >= 0:
            after_event = i + len(EVENT_KEY)
        elif end - after_event > NO_EVENT_BYTES:
            where = (f"its first {size_words(end)} of JSON hold" if after_event == 0 else
                     f"the {size_words(end - after_event)} of JSON after its last event "
                     f"(at byte {after_event:,}) hold")
            raise TraceError(f"{path}: not a trace: {where} no trace event (every event has a \"ph\"): whitespace "
                             "or padding, or a gzip bomb; pass the .json or .json.gz that torch.profiler exports")
        start = end


def _plain(f, size: int):
    """Append the file to `out` CHUNK_BYTES at a time, read straight into the buffer. The buffer grows by
    one block of zeros reused for every chunk (a fresh one per chunk would fault its pages in each time),
    and no further than the file's size: as cheap as the one zero-filled buffer of the file's size it
    replaces, which a 2.7 GB file of whitespace would have filled before a byte was checked."""
    def fill(out: bytearray):
        zeros = memoryview(bytes(CHUNK_BYTES))
        while True:
            n0 = len(out)
            # up to the size fstat gave; past it 1 MB at a time, to find the end (or what was appended since)
            out += zeros[:min(CHUNK_BYTES, size - n0) if n0 < size else 1 << 20]
            with memoryview(out) as view:
                n = f.readinto(view[n0:])
            del out[n0 + n:]
            if not n:
                return
            yield
    return fill


def _gunzip(f, path: Path):
    """Append the decompressed text to `out`, CHUNK_BYTES at a time, member after member, reading the file as it
    goes."""
    def fill(out: bytearray):
        yield from _inflate(f, path, out.extend)
    return fill


def _inflate(f, path: Path, append):
    from isal import igzip_lib

    d = igzip_lib.IgzipDecompressor(igzip_lib.DECOMP_GZIP)
    pending = b""        # compressed bytes read but not yet given to a decompressor (the next member's)
    produced = 0
    unchecked = 0        # text appended since the caller last checked it
    try:
        while True:
            data = b""
            if d.needs_input:
                data, pending = pending or f.read(GZ_INPUT_BYTES), b""
                if not data:
                    if unchecked:
                        unchecked = 0
                        yield
                    raise TraceError(f"{path}: not a readable gzip file: it ends early, after {produced:,} bytes "
                                     "of JSON (truncated: an interrupted download or copy?); fetch or export it again")
            chunk = d.decompress(data, GZ_OUTPUT_BYTES)
            produced += len(chunk)
            if chunk:
                append(chunk)
                unchecked += len(chunk)
                if unchecked >= CHUNK_BYTES:
                    unchecked = 0
                    yield
            if d.eof:
                rest = _after_member(d.unused_data, f)
                if rest is None:
                    if unchecked:
                        yield
                    return
                d, pending = igzip_lib.IgzipDecompressor(igzip_lib.DECOMP_GZIP), rest
    except igzip_lib.IsalError as e:
        raise TraceError(f"{path}: not a readable gzip file ({e}): it is corrupt; fetch or export it "
                         "again") from None


def _after_member(rest: bytes, f) -> bytes | None:
    """The first bytes of the next gzip member, or None at the end of the file. Trailing zero padding
    (some writers add it) and trailing bytes that are not a gzip member are ignored."""
    while True:
        rest = rest.lstrip(b"\x00")
        if len(rest) >= len(GZIP_MAGIC):
            break
        more = f.read(GZ_INPUT_BYTES)
        if not more:
            break
        rest += more
    return rest if rest[:2] == GZIP_MAGIC else None
