"""The native scan of a .json.gz's events as its text arrives, so that the gunzip and the scan share two cores.

The read (tracetriage.analyzers.loading.read) decompresses the text straight into one buffer of the size the gzip
trailer gives (eventscan.text_buffer: its pages faulted in by the gunzip's own writes, none copied or grown), a block
at a time, and publishes how much it wrote (eventscan.advance); a thread here scans each piece of whole events written
so far, into one set of columns and span tables, so that when the last block is in, only the last piece is left to
scan. The decoder (tracetriage.analyzers.loading.native) takes the scanned columns instead of scanning the whole
text after the read: for a 300 MB trace the scan's ~0.5 s of CPU ran after the gunzip's; now beside it.

The scan is one call (eventscan.scan_stream) that waits for each piece and cuts it at an event boundary without the
GIL: while the report's modules import, the main thread holds the GIL for long stretches and gives it up only once
asked and the switch interval is over, so a scan that waited for its pieces in Python (a condition, a lock and a
regular expression a piece, 150 pieces for 300 MB) spent more time waiting for the GIL than scanning. The read writes
beyond what it published, the scan reads before it: neither waits for the other; the buffer is cut to the text's
length once the scan, which holds it, is done.

The scan claims its text a step at a time (at most STEP_BYTES, eventscan's progress slot P_FRONT) before it scans it,
and runs behind the gunzip (which inflates twice as fast): once the whole text is in, the read's thread takes the
second half of what is not yet claimed (the tail, from an event boundary on) and scans it into columns of its own
(eventscan.scan_tail) while the scan goes on to where the tail begins: two parts, merged by assemble as the split
scan's are, on two cores where one scanned alone (the 293 MB benchmark trace: the scan's last piece came 0.16-0.23 s
after the gunzip's end, against 0.32-0.40 s).

Anything the streamed scan does not read ends it, and the decoder then reads the whole text as it would have
(the scan after the read, or msgspec): a piece the scan does not handle (a text msgspec must decode, a cut that
is no event boundary), more rows than the columns hold, a read that fails or stops; and the file is read again as it
always was (tracetriage.analyzers.loading.read) where the text is longer than the trailer said (a multi-member or
>4 GB file) or the gzip reader refuses it. This module imports no numpy (the read-ahead starts before numpy is
imported): the columns are anonymous memory maps, viewed by native.py as numpy arrays.
"""
from __future__ import annotations

import mmap
import os
import re
import threading
from dataclasses import dataclass

try:
    from tracetriage.analyzers.loading import eventscan
except ImportError:        # not built: nothing is streamed, and msgspec decodes
    eventscan = None

# An event boundary: the '{' of the event after `}, ` (the scan of the piece that ends there checks it is one)
EVENT_BOUNDARY = re.compile(rb'\}\s*,\s*\{\s*"ph"\s*:')
MIN_BYTES = 32 << 20       # smaller texts are scanned after the read (in two threads): as quick, one way fewer
PIECE_BYTES = 2 << 20      # the scan waits for this much new text before it scans a piece
CUT_WINDOW = 256 << 10      # a piece ends at the first event boundary in the last CUT_WINDOW bytes read
STEP_BYTES = 8 << 20       # the most text one step claims: a scan behind the gunzip leaves the rest unclaimed
# Once the gunzip ends, the read's thread scans the second half of the text the scan has not claimed (the tail), if
# this much or more is left: the scan ran behind the gunzip (the 293 MB benchmark trace: its last piece scanned 0.17 s
# after the gunzip's end with nothing else running, ~0.4 s with the report's modules importing beside), and all that
# time one core scanned while the other waited
TAIL_MIN_BYTES = 16 << 20
N_INT_COLUMNS = 16         # eventscan.c's integer columns (native.INT_COLUMNS)
TABLE_CAP = 1 << 19        # = native.TABLE_CAP: hash slots per span table
BYTES_PER_ROW = 64         # = native.BYTES_PER_ROW[0]: rows allocated per byte of text (pages never written cost
                           # nothing); a denser text fills them, and native.py scans it again with room for more
OK = 0
# eventscan.c's progress slots (written, state, the list's start, piece bytes, cut window, the scan's claimed front,
# step bytes, the tail's start) and the read's states
P_FILLED, P_STATE, P_START, P_PIECE, P_WINDOW, P_FRONT, P_STEP, P_TAIL, N_PROGRESS = range(9)
READING, ENDED, STOPPED = 0, 1, -1
NO_TAIL = -5


def enabled() -> bool:
    """Is the scan there (built at install, and not by an older install: a checkout updated without reinstalling keeps
    its old build) and not switched off (TRACETRIAGE_NO_NATIVE=1)?"""
    return hasattr(eventscan, "scan_stream") and os.environ.get("TRACETRIAGE_NO_NATIVE", "") != "1"


@dataclass
class Scanned:
    """The columns and tables of a text scanned as it arrived, as eventscan.scan fills them (see native._Scanned):
    memory maps of float64 (2, cap), int64 (16, cap), int32 (3, cap), int64 (9 TABLE_CAP) x 2, and the counts."""
    cap: int
    f64: mmap.mmap
    i64: mmap.mmap
    i32: mmap.mmap
    tab_off: mmap.mmap
    tab_len: mmap.mmap
    start: int             # where its text begins: the events list's '[' (the first part), an event's '{' (the tail)
    info: list[int]        # [events, rows, position after the list's ']' (-1: a part the tail follows), names,
                           # categories, shapes]


def _map(nbytes: int) -> mmap.mmap:
    # private: mmap's default for an anonymous map is MAP_SHARED, shared memory, whose pages fault in dearer. Not
    # asked for as transparent huge pages: where the system has memory free in 2 MB blocks they fault in cheaper, but
    # where it must compact memory to make one (a machine whose memory the page cache holds), each fault waits for it:
    # on this project's machine, 6 interleaved pairs of the 293 MB report (chrt -f 1), the report's system time was
    # 0.45-0.85 s with huge pages on the columns and 0.46-0.54 s without, its wall time a median 1.93 s against 1.71 s
    return mmap.mmap(-1, max(nbytes, 1), flags=mmap.MAP_PRIVATE)


class _Columns:
    """The columns and span tables one part of a text is scanned into (eventscan.c's), for up to `cap` rows."""

    def __init__(self, cap: int):
        self.cap = cap
        self.f64, self.i64, self.i32 = _map(16 * cap), _map(8 * N_INT_COLUMNS * cap), _map(12 * cap)
        self.tab_off, self.tab_len = _map(72 * TABLE_CAP), _map(72 * TABLE_CAP)
        self.tab_slot = _map(12 * TABLE_CAP)
        self.tab_slot.write(b"\xff" * (12 * TABLE_CAP))       # every slot free (-1)
        self.info = bytearray(48)                              # 6 int64 counts, zeros: a fresh part

    def buffers(self) -> tuple:
        return self.f64, self.i64, self.i32, self.tab_off, self.tab_len, self.tab_slot, self.info

    def scanned(self, start: int) -> Scanned:
        with memoryview(self.info).cast("q") as counts:
            return Scanned(self.cap, self.f64, self.i64, self.i32, self.tab_off, self.tab_len, start, counts.tolist())


class Stream:
    """One text's scan as it is read: the read decompresses straight into `text` (a buffer of the size the gzip trailer
    gives, its pages not yet written) and calls wrote() after each block, then end() (or stop()) once."""

    def __init__(self, text_bytes: int):
        # the whole text's room at once, as no page of it written: each page is faulted in by the gunzip's own write
        # (a bytearray grown block by block was the same pages, plus a copy of every block from the decompressor's)
        self.text = eventscan.text_buffer(text_bytes)
        self.filled = 0                         # text[:filled] is decompressed; the read writes on from there
        self.columns = _Columns(text_bytes // BYTES_PER_ROW + 16)
        # what the read has written (eventscan.advance) and the scan's settings: eventscan.scan_stream reads them
        # without the GIL
        self.progress = bytearray(8 * N_PROGRESS)
        with memoryview(self.progress).cast("q") as slots:
            slots[P_START], slots[P_PIECE], slots[P_WINDOW] = -1, PIECE_BYTES, CUT_WINDOW
            slots[P_FRONT], slots[P_STEP], slots[P_TAIL] = -1, STEP_BYTES, -1
        self.result: list[Scanned] | None = None
        self.tail: Scanned | None = None         # the tail end() scanned, if it took one
        self.thread = threading.Thread(target=self._run, name="tracetriage streamed scan", daemon=True)
        self.thread.start()

    # --- the read's side ---------------------------------------------------------------------------------

    def wrote(self, n: int) -> None:
        """n more bytes of text are written after text[:filled]."""
        self.filled += n
        eventscan.advance(self.progress, self.filled, READING)

    def end(self) -> None:
        """The whole text is read: take the second half of what the scan has not claimed and scan it in this thread
        (where TAIL_MIN_BYTES or more is left), let the scan read its last piece, then cut the buffer to the text (once
        the scan, which holds it, is done: a bytearray held cannot be resized)."""
        eventscan.advance(self.progress, self.filled, ENDED)
        tail = self._scan_tail()
        self.thread.join()
        if tail is not None and self.result is not None:
            self.result = None if tail is _NOT_READ else [*self.result, tail]
        del self.text[self.filled:]

    def _scan_tail(self):
        """The tail's Scanned, scanned here; None where none was taken, _NOT_READ where the scan of it failed."""
        with memoryview(self.progress).cast("q") as slots:
            front = slots[P_FRONT]
        if front < 0 or self.filled - front < TAIL_MIN_BYTES:
            return None
        try:
            columns = _Columns((self.filled - front) // BYTES_PER_ROW + 16)     # (the tail is less: the front only
        except (OSError, MemoryError):          # moves on) (maps the system refuses: the scan reads on alone)
            return None
        status = eventscan.scan_tail(self.text, self.progress, *columns.buffers(), TAIL_MIN_BYTES)
        if status == NO_TAIL:
            return None
        if status != OK:
            return _NOT_READ
        with memoryview(self.progress).cast("q") as slots:
            return columns.scanned(slots[P_TAIL])

    def stop(self) -> None:
        """The read failed or was stopped: end the scan, with no result."""
        eventscan.advance(self.progress, self.filled, STOPPED)
        self.thread.join()

    def finish(self) -> list[Scanned] | None:
        """Wait for the scan of the last piece: the parts' columns (the tail's second, where end() took one), or None
        where the stream did not read the text."""
        self.thread.join()
        return self.result

    # --- the scan's side: one call, which waits for each piece without the GIL ----------------------------

    def _run(self) -> None:
        try:
            status = eventscan.scan_stream(self.text, self.progress, *self.columns.buffers())
        except Exception:           # (a buffer the scan refuses...): the decoder reads the text itself
            status = None
        if status != OK:
            self.result = None
            return
        with memoryview(self.progress).cast("q") as slots:
            self.result = [self.columns.scanned(slots[P_START])]


_NOT_READ = object()       # a tail whose scan failed: the decoder reads the whole text itself


# The text the read handed over with its stream, until the decoder takes it (one at a time: a load reads one file)
_handed: tuple[bytearray, Stream] | None = None


def hand_over(text: bytearray, stream: Stream) -> None:
    """The read is done: keep its stream for the decoder of `text` (take)."""
    global _handed
    forget()
    _handed = (text, stream)


def scanned(text: bytes | bytearray) -> bool:
    """Did the stream read this very text to its end (take will give its columns)?"""
    return _handed is not None and _handed[0] is text and _handed[1].result is not None


def take(text: bytes | bytearray) -> list[Scanned] | None:
    """The parts' columns the stream scanned for this very text (waiting for its last piece), or None: no stream read
    it."""
    global _handed
    handed, _handed = _handed, None
    if handed is None or handed[0] is not text:
        if handed is not None:
            handed[1].stop()
        return None
    return handed[1].finish()


def forget() -> None:
    """Let go of a stream nobody took (its scan's thread ended: a decoder may fork next)."""
    global _handed
    handed, _handed = _handed, None
    if handed is not None:
        handed[1].stop()
