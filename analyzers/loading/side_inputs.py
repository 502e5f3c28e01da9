"""Side inputs: what lies beside a trace file and changes what the analyses may say of it.

Read once by loading and carried on the Trace (Trace.side), so that no analysis re-reads a file
by its path:
    ceilings   measured copy GB/s and matmul TFLOP/s for the trace's device (`tracetriage capture
               ceilings`): `ceilings.json` beside the trace, else in the user's cache
    sidecar    what the capture harness declared about the run (`NAME.meta.json` beside
               `NAME.json.gz`): parameters, timing, bytes per call
They are never cached with the trace: either file may change while the trace does not.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

from tracetriage.analyzers.loading.formats import SIDECAR_SUFFIX, trace_stem
from tracetriage.analyzers.model.dtypes import normalise_dtype
from tracetriage.analyzers.model.trace import SideInputs


def read(trace_path: str | os.PathLike, device_name: str | None) -> SideInputs:
    return SideInputs(ceilings=find_ceilings(str(trace_path), device_name), sidecar=read_sidecar(trace_path))


def read_sidecar(trace_path: str | os.PathLike) -> dict | None:
    """The capture's sidecar of this trace (NAME.meta.json naming NAME.json[.gz]), or None."""
    p = Path(trace_path)
    stem = trace_stem(p.name)
    if stem is None:
        return None
    try:
        meta = json.loads((p.parent / f"{stem}{SIDECAR_SUFFIX}").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or (meta.get("trace") not in (None, p.name)):
        return None
    return meta


# --- measured ceilings -----------------------------------------------------------------------------


def default_ceilings_path() -> Path:
    """`$TRACETRIAGE_CACHE_DIR/ceilings.json`, else `~/.cache/tracetriage/ceilings.json`."""
    base = os.environ.get("TRACETRIAGE_CACHE_DIR")
    root = Path(base) if base else Path.home() / ".cache" / "tracetriage"
    return root / "ceilings.json"


def _positive_numbers(obj: object, what: str, path: object) -> dict[str, float]:
    if not isinstance(obj, dict):
        raise ValueError(f"{path}: '{what}' must be an object of numbers, "
                         f"got {type(obj).__name__}")
    out = {}
    for key, value in obj.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value <= 0:
            raise ValueError(f"{path}: '{what}.{key}' must be a positive number, "
                             f"got {value!r}")
        out[str(key)] = float(value)
    return out


def load_ceilings(path: str | os.PathLike) -> dict:
    """Read a ceilings JSON file written by `tracetriage capture ceilings`.

    Returns the dict with `copy_gbps` and `matmul_tflops` checked (positive numbers;
    matmul dtype keys normalised to canonical names). Raises ValueError with the path
    and the reason on malformed content; a missing file raises FileNotFoundError.
    """
    text = Path(path).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(data).__name__}")
    device = data.get("device_name")
    if not isinstance(device, str) or not device.strip():
        raise ValueError(f"{path}: 'device_name' must be a non-empty string")
    out = dict(data)
    out["copy_gbps"] = _positive_numbers(data.get("copy_gbps", {}), "copy_gbps", path)
    raw = _positive_numbers(data.get("matmul_tflops", {}), "matmul_tflops", path)
    matmul = {}
    for key, value in raw.items():
        dtype = normalise_dtype(key)
        if dtype is None:
            raise ValueError(f"{path}: 'matmul_tflops' has unknown dtype {key!r}")
        matmul[dtype] = value
    out["matmul_tflops"] = matmul
    return out


def find_ceilings(trace_path: str, device_name: str | None) -> dict | None:
    """Measured ceilings for this device: beside the trace, else in the user's cache."""
    if not device_name:
        return None
    for p in (Path(trace_path).parent / "ceilings.json", default_ceilings_path()):
        try:
            c = load_ceilings(p)
        except (OSError, ValueError):
            continue
        if c.get("device_name") and c["device_name"].strip().lower() == device_name.strip().lower():
            return c
    return None
