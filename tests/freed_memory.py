"""The test process keeps the memory its arrays free for its next arrays, not handing it back to the kernel.

glibc's malloc serves a large block (128 kB and up, a threshold it raises to at most 32 MB as such blocks are freed)
with a fresh mmap, unmaps it when it is freed, and gives the top of its heap back to the kernel past a trim
threshold; the kernel then zero-fills each 4 kB page of the next such block at its first touch, one minor page fault
each. A test process analyses hundreds of traces one after another, each into columns of tens of MB, so it paid that
again for every analysis. test_bad_inputs, test_native_scan, test_streamed_scan and test_other_peoples_traces in
one process (`pytest -n0`), run side by side with and without the settings below, twice, load ~10: 1.38 M and 1.36 M
minor faults against 0.62 M and 0.64 M; 10.3 and 10.0 s of system time against 4.9 and 5.7 s; 33.7 and 32.1 CPU-s
in all against 27.5 and 27.7; max RSS 0.91 and 0.86 GB against 1.05 and 1.06 GB. Only the test processes: a CLI,
server or child process that a test starts keeps the allocator as users run it (the tests that read a process's
memory or time read the product's own).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_TRIM_THRESHOLD = -1        # mallopt's parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_ABOVE = 256 << 20       # blocks below this come from the heap (a bundled trace's columns are tens of MB)
TRIM_ABOVE = 1 << 30         # the heap keeps up to 1 GB of freed memory at its top


def keep_freed_memory() -> bool:
    """Set glibc's thresholds for this process; False where the C library is not glibc (nothing changes there)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):     # musl has no mallopt
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_ABOVE)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_ABOVE))
