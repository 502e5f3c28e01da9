"""Test-session setup shared by every test file.

Triton decides at kernel-definition time whether to interpret, so on a machine
without CUDA the switch must be set before anything imports `kernels`.
"""
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A cache of the test session's own: results never depend on what a developer's earlier runs left
# in ~/.cache/tracetriage (subprocesses started by the tests inherit it).
os.environ.setdefault("TRACETRIAGE_CACHE_DIR", tempfile.mkdtemp(prefix="tracetriage-test-cache-"))
sys.path.insert(0, str(ROOT / "tests"))  # helper modules such as fixtures_gpu_trace

try:
    import torch

    _has_cuda = torch.cuda.is_available()
except ImportError:  # pragma: no cover
    _has_cuda = False
if not _has_cuda:
    os.environ.setdefault("TRITON_INTERPRET", "1")
