"""Will a trace fit in memory? Refuse the ones that would not, before the OOM killer does.

A load holds the JSON text and, while it decodes, a few small Python objects per event
(name, category, numbers, args). The estimate is the text + MEM_PER_EVENT per event +
MEM_BASE, against the memory available (MemAvailable, or the headroom under a cgroup limit,
or TRACETRIAGE_MEMORY_BUDGET such as "8G"); a load that would not fit is refused with a
one-line message, which says how to raise the budget, rather than killed halfway:
- before reading, when even MIN_PER_JSON_BYTE x the JSON's size would not fit (a .json.gz is
  decompressed as a stream, which stops as soon as the JSON grows past that: tracetriage.analyzers.loading.read);
- after reading, by counting the events, when the JSON is over CHECK_MIN_BYTES and there is
  less than MAX_PER_JSON_BYTE x its size to spare (otherwise nothing is counted: ~1 s per 2 GB).
The per-event figure is measured: decoding in 32 MB pieces, a 2 GB, 6.4M-event trace (grown
from an H200 trace) peaks at 2.95 GB summed over both decode processes, the text plus ~100
bytes per event; 250 keeps the estimate an upper bound (tests/test_bad_inputs.py checks it).
"""
from __future__ import annotations

import math
import os
import re
from pathlib import Path

from tracetriage.analyzers.model.errors import TraceError

MEM_PER_EVENT = 250
MEM_BASE = 300 << 20            # the interpreter, numpy, pyarrow
MIN_PER_JSON_BYTE = 1.3         # the text, and its columns: at least 30% more
MAX_PER_JSON_BYTE = 8.0         # the densest real traces hold one event per ~150 bytes of JSON
CHECK_MIN_BYTES = 32 << 20  # = decode.PARALLEL_MIN_BYTES: smaller traces always load


def _parse_size(text: str) -> int | None:
    m = re.fullmatch(r"\s*([0-9.]+)\s*([kmgt]?)i?b?\s*", text.lower())
    if not m:
        return None
    return int(float(m.group(1)) * 1024 ** " kmgt".index(m.group(2) or " "))


def _cgroup_headroom() -> int | None:
    """Memory left under this process's cgroup limit (containers, CI runners), if there is one: the
    limit minus what is in use, not counting inactive page cache (the kernel reclaims that first)."""
    for d, limit_f, usage_f, cache_key in (("/sys/fs/cgroup", "memory.max", "memory.current", "inactive_file"),
                                           ("/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes",
                                            "total_inactive_file")):
        try:
            with open(f"{d}/{limit_f}") as f:
                limit = f.read().strip()
            with open(f"{d}/{usage_f}") as f:
                usage = int(f.read().strip())
        except (OSError, ValueError):
            continue
        if not (limit.isdigit() and int(limit) < (1 << 60)):
            continue
        try:
            with open(f"{d}/memory.stat") as f:
                usage -= next((int(line.split()[1]) for line in f if line.startswith(cache_key + " ")), 0)
        except (OSError, ValueError, IndexError):
            pass
        return max(int(limit) - usage, 0)
    return None


def _available() -> int | None:
    try:  # Linux: MemAvailable, without importing psutil (the report's budget is about a second)
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:  # pragma: no cover
        return None


def memory_budget() -> tuple[int, str]:
    """Bytes a load may use, and where that figure comes from (for the message)."""
    env = os.environ.get("TRACETRIAGE_MEMORY_BUDGET")
    if env:
        size = _parse_size(env)
        if size is not None:
            return size, "TRACETRIAGE_MEMORY_BUDGET"
    avail, what = _available(), "available"
    if avail is None:
        return 1 << 62, "unknown"
    cg = _cgroup_headroom()
    if cg is not None and cg < avail:
        avail, what = cg, "available under this container's memory limit"
    return avail, what


def size_words(n: float) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


def _raise_it(need: int, exact: bool, what: str) -> str:
    """How to give a load more memory: a budget in the TRACETRIAGE_MEMORY_BUDGET syntax (GiB) above the need;
    when the need is only a lower bound (the text was not read to its end), twice that."""
    gib = math.ceil((need if exact else 2 * need) / 2**30)
    if what == "TRACETRIAGE_MEMORY_BUDGET":
        return f"if the machine has the memory, raise it (TRACETRIAGE_MEMORY_BUDGET={gib}G)"
    return f"if more memory is free than that, set TRACETRIAGE_MEMORY_BUDGET={gib}G"


def _too_big(path: Path, json_bytes: int, need: int, budget: int, what: str, *, events: int | None = None,
             more: bool = False) -> TraceError:
    count = f" ({events:,} events)" if events is not None else ""
    return TraceError(
        f"{path}: too big to analyse here: {'more than ' if more else ''}{size_words(json_bytes)} of JSON{count} needs "
        f"{'about' if events is not None else 'more than' if more else 'at least'} {size_words(need)} of memory and "
        f"{size_words(budget)} is {what}; {_raise_it(need, events is not None, what)}, "
        "run it on a machine with more memory, or capture a shorter window (fewer steps, or a profiler schedule "
        "with active=1)")


def read_limit() -> int:
    """The most JSON worth reading at all (never less than CHECK_MIN_BYTES: small traces always load)."""
    budget, _ = memory_budget()
    return max(int((budget - MEM_BASE) / MIN_PER_JSON_BYTE), CHECK_MIN_BYTES)


def refuse_to_read(path: Path, json_bytes: int, more: bool = False) -> TraceError:
    budget, what = memory_budget()
    return _too_big(path, json_bytes, int(MEM_BASE + MIN_PER_JSON_BYTE * json_bytes), budget, what, more=more)


def check_memory(data: bytes | bytearray, path: Path) -> None:
    """After reading: refuse a JSON whose events would not fit in memory once decoded."""
    n = len(data)
    if n < CHECK_MIN_BYTES:
        return
    budget, what = memory_budget()
    if MEM_BASE + MAX_PER_JSON_BYTE * n <= budget:
        return  # room for even the densest trace: no need to count
    events = data.count(b'"ph"')
    need = MEM_BASE + n + MEM_PER_EVENT * events
    if need > budget:
        raise _too_big(path, n, need, budget, what, events=events)


