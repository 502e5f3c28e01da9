"""The test process reuses the pages of the arrays it freed (tests/freed_memory.py, set up by conftest.py)."""
import resource
import sys

import numpy as np
import pytest

import freed_memory

PAGE = resource.getpagesize()


def _faults_filling(n_bytes: int) -> int:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    a = np.empty(n_bytes, dtype=np.uint8)
    a.fill(1)                           # every page touched
    del a
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_an_array_of_tens_of_mb_freed_and_made_again_takes_its_pages_without_faulting_them_in():
    assert freed_memory.keep_freed_memory()
    n = 48 << 20        # above glibc's own 32 MB cap on its mmap threshold: without the settings each such array is a
    _faults_filling(n)  # fresh mmap, faulted in again: n / PAGE faults, or ~520 where numpy's 2 MB huge pages back it
    assert _faults_filling(n) < 0.001 * n / PAGE     # 12 faults of 12,288 pages: here 0
