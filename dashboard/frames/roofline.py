"""The Roofline page's frames: each costed op's point, and the device's ceilings for a dtype."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from tracetriage.analyzers.triage.report import Analysis
from tracetriage.analyzers.voice import peaks as peak_words


@dataclass(frozen=True)
class Ceilings:
    device: str
    source: str                 # datasheet | measured | measured+datasheet
    bytes_per_s: float
    flops_per_s: float          # for the dtype asked
    ridge: float                # FLOP/byte
    dtype: str
    passed: str = ""            # the measured ceilings a kernel of the trace passed, in words ('' none)


@dataclass(frozen=True)
class RooflineView:
    points: pd.DataFrame        # name, shapes, dtype, kind, calls, device_us, intensity, tflops, gbps, bound
    ceilings: Ceilings | None
    dtypes: tuple[str, ...]     # dtypes of the points, most device time first
    default_dtype: str | None   # the dtype the regime verdict speaks of


def roofline(a: Analysis, dtype: str | None = None) -> RooflineView:
    pts = pd.DataFrame([{"name": p.name, "shapes": p.shapes, "dtype": p.dtype, "kind": p.kind, "calls": p.calls,
                         "device_us": p.device_us, "device_ms": p.device_us / 1e3, "flops": p.flops,
                         "bytes": p.bytes, "intensity": p.intensity, "tflops": p.achieved_tflops,
                         "gbps": p.achieved_gbps, "bound": p.bound.value, "frac_of_peak": p.frac_of_peak}
                        for p in a.roof.points],
                       columns=["name", "shapes", "dtype", "kind", "calls", "device_us", "device_ms", "flops", "bytes",
                                "intensity", "tflops", "gbps", "bound", "frac_of_peak"])
    by_time = (pts.groupby("dtype")["device_us"].sum().sort_values(ascending=False) if len(pts)
               else pd.Series(dtype=float))
    dtypes = tuple(str(d) for d in by_time.index)
    default = a.verdict.dtype if a.verdict.dtype in dtypes else (dtypes[0] if dtypes else None)
    dtype = dtype or default
    pk = a.roof.peaks
    ceil = None
    if pk is not None and dtype:
        ceil = Ceilings(device=pk.name, source=pk.source, bytes_per_s=pk.bytes_per_s, flops_per_s=pk.flops(dtype),
                        ridge=pk.ridge(dtype), dtype=dtype, passed=peak_words.passed(pk))
    return RooflineView(points=pts, ceilings=ceil, dtypes=dtypes, default_dtype=default)
