"""What this machine lends the rank analyses: how many cores."""
from __future__ import annotations

import os


def usable_cpus() -> int:
    """The cores this process may run on: taskset and container cpusets leave fewer than os.cpu_count()."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):   # not on Linux
        return os.cpu_count() or 1
