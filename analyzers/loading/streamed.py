"""The native scan of a .json.gz's events as its text arrives, so that the gunzip and the scan share two cores.

The read (tracetriage.analyzers.loading.read) appends the decompressed text to one bytearray a block at a time;
a thread here scans each piece of whole events appended so far, into one set of columns and span tables
(eventscan.scan goes on from the counts of the pieces before), so that when the last block is in, only the
last piece is left to scan. The decoder (tracetriage.analyzers.loading.native) takes the scanned columns instead
of scanning the whole text after the read: for a 300 MB trace the scan's ~0.6 s of CPU ran after the gunzip's
~0.6 s; now beside it.

The scan reads the buffer with the GIL released, and a bytearray that a reader holds cannot grow (nor may it
move): `lock` is held by the scan while it reads and by the read while it appends; a block that arrives
meanwhile waits in a spill buffer and is appended at the read's next turn.

Anything the streamed scan does not read ends it, and the decoder then reads the whole text as it would have
(the scan after the read, or msgspec): a piece the scan does not handle (a text msgspec must decode, a cut that
is no event boundary), more rows than the columns hold (they are sized from the gzip trailer's size, a hint that
a multi-member or >4 GB file gets wrong), a read that fails or stops. This module imports no numpy (the
read-ahead starts before numpy is imported): the columns are anonymous memory maps, viewed by native.py as numpy
arrays.
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
N_INT_COLUMNS = 16         # eventscan.c's integer columns (native.INT_COLUMNS)
TABLE_CAP = 1 << 19        # = native.TABLE_CAP: hash slots per span table
BYTES_PER_ROW = 64         # = native.BYTES_PER_ROW[0]: rows allocated per byte of text (pages never written cost
                           # nothing); a denser text fills them, and native.py scans it again with room for more
SPILL_BYTES = 8 << 20      # blocks that arrive while a piece is scanned wait here (a piece's scan: ~4 ms, 2 blocks)
OK = 0


def enabled() -> bool:
    """Is the scan there (built at install) and not switched off (TRACETRIAGE_NO_NATIVE=1)?"""
    return eventscan is not None and os.environ.get("TRACETRIAGE_NO_NATIVE", "") != "1"


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
    start: int             # the events list's '[' in the text
    info: list[int]        # [events, rows, position after the list's ']', names, categories, shapes]


def _map(nbytes: int) -> mmap.mmap:
    # private: mmap's default for an anonymous map is MAP_SHARED, shared memory, whose pages fault in dearer and
    # never huge
    m = mmap.mmap(-1, max(nbytes, 1), flags=mmap.MAP_PRIVATE)
    if hasattr(mmap, "MADV_HUGEPAGE"):     # as numpy does for its large arrays: fewer page faults
        try:
            m.madvise(mmap.MADV_HUGEPAGE)
        except OSError:                    # (a kernel without transparent huge pages)
            pass
    return m


class Stream:
    """One text's scan as it is read: the read calls append() for each block, and end() (or stop()) once."""

    def __init__(self, text: bytearray, text_bytes: int):
        cap = text_bytes // BYTES_PER_ROW + 16
        self.text = text
        self.cap = cap
        self.f64, self.i64, self.i32 = _map(16 * cap), _map(8 * N_INT_COLUMNS * cap), _map(12 * cap)
        self.tab_off, self.tab_len = _map(72 * TABLE_CAP), _map(72 * TABLE_CAP)
        self.tab_slot = _map(12 * TABLE_CAP)
        self.tab_slot.write(b"\xff" * (12 * TABLE_CAP))       # every slot free (-1)
        self.info = bytearray(48)                              # 6 int64 counts, zeros: a fresh part
        self.lock = threading.Lock()                           # the scan reads `text` / the read grows it
        # blocks that arrived while the scan read the text: one buffer, reused (blocks kept as they came would each
        # be fresh memory, faulted in: +20% page faults for the read of a 300 MB trace)
        self.spill, self.spilled = bytearray(SPILL_BYTES), 0
        self.arrived = threading.Condition()
        self.ended = self.stopped = False
        self.need = 0                          # the text's length the scan waits for
        self.result: Scanned | None = None
        self.thread = threading.Thread(target=self._run, name="tracetriage streamed scan", daemon=True)
        self.thread.start()

    # --- the read's side ---------------------------------------------------------------------------------

    def append(self, block: bytes) -> None:
        """Append a block of text: now, or, while the scan reads a piece, into the spill, appended at the next
        turn (a spill that has no room for it waits for the piece)."""
        if self.lock.acquire(blocking=self.spilled + len(block) > len(self.spill)):
            try:
                self._flush()
                self.text += block
            finally:
                self.lock.release()
            with self.arrived:
                if len(self.text) >= self.need:     # (the scan sleeps until its next piece is in: one wake-up a piece)
                    self.arrived.notify()
        else:
            self.spill[self.spilled:self.spilled + len(block)] = block
            self.spilled += len(block)

    def waiting(self) -> int:
        """Bytes appended but not yet in the text."""
        return self.spilled

    def _flush(self) -> None:
        if self.spilled:
            with memoryview(self.spill) as view, view[:self.spilled] as spilled:
                self.text += spilled
            self.spilled = 0

    def end(self) -> None:
        """The whole text is read: append what waits, and let the scan read its last piece."""
        with self.lock:
            self._flush()
        with self.arrived:
            self.ended = True
            self.arrived.notify()

    def stop(self) -> None:
        """The read failed or was stopped: end the scan, with no result."""
        with self.arrived:
            self.stopped = True
            self.arrived.notify()
        self.thread.join()

    def finish(self) -> Scanned | None:
        """Wait for the scan of the last piece: the columns, or None where the stream did not read the text."""
        self.thread.join()
        return self.result

    # --- the scan's side -------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self.result = self._scan_as_read()
        except Exception:           # (a column map the system refuses...): the decoder reads the text itself
            self.result = None

    def _wait(self, need: int) -> tuple[int, bool] | None:
        """The text's length once it reaches `need` bytes or is all read, and whether it is; None: stopped."""
        with self.arrived:
            self.need = need
            while not self.stopped and not self.ended and len(self.text) < need:
                self.arrived.wait()
            if self.stopped:
                return None
            return len(self.text), self.ended

    def _scan_as_read(self) -> Scanned | None:
        start = -1
        at = 0          # where the next piece begins: the list's '[', then each piece's first event's '{'
        need = PIECE_BYTES
        counts = memoryview(self.info).cast("q")
        while True:
            got = self._wait(need)
            if got is None:
                return None
            n, ended = got
            need = n + PIECE_BYTES
            with self.lock:
                if start < 0:
                    start = eventscan.find_events(self.text)
                    if start < 0:
                        if ended:
                            return None        # (no events list it can find: the decoder's to say why)
                        continue
                    at = start
                if ended:
                    hi, last = len(self.text), True
                else:
                    cut = EVENT_BOUNDARY.search(self.text, max(at, n - CUT_WINDOW), n)
                    if cut is None:
                        continue       # (an event longer than the window: the next wait brings more)
                    hi, last = cut.start() + cut.group(0).rindex(b"{"), False
                status = eventscan.scan(self.text, at, hi, last, self.f64, self.i64, self.i32, self.tab_off,
                                        self.tab_len, self.tab_slot, self.info)
            if status != OK or (not last and counts[2] >= 0):     # (a list that ended before the text read)
                return None
            if last:
                return Scanned(self.cap, self.f64, self.i64, self.i32, self.tab_off, self.tab_len, start,
                               counts.tolist())
            at = hi


# The text the read handed over with its stream, until the decoder takes it (one at a time: a load reads one file)
_handed: tuple[bytearray, Stream] | None = None


def hand_over(text: bytearray, stream: Stream) -> None:
    """The read is done: keep its stream for the decoder of `text` (take)."""
    global _handed
    forget()
    _handed = (text, stream)


def take(text: bytes | bytearray) -> Scanned | None:
    """The columns the stream scanned for this very text (waiting for its last piece), or None: no stream read it."""
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
