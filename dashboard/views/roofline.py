"""Roofline: each costed op on the device's log-log roofline, sized by time, coloured by bound."""
from __future__ import annotations

import streamlit as st

from tracetriage.dashboard import charts, data, state, tables
from tracetriage.dashboard import words as words


def render() -> None:
    got = state.current_analysis()
    if got is None:
        return
    entry, a = got
    view = data.roofline(a)
    if not view.dtypes:
        st.info(words.no_points())
        return
    dtype = st.selectbox("dtype", view.dtypes, index=view.dtypes.index(view.default_dtype), key="roof_dtype")
    view = data.roofline(a, dtype)
    pts = view.points[view.points["dtype"] == dtype]
    shown = pts[(pts["intensity"] > 0) & (pts["tflops"] > 0)]
    c = view.ceilings
    if c is not None:
        st.caption(words.plain(words.ceilings_caption(c.device, c.source, c.dtype, c.flops_per_s / 1e12,
                                                      c.bytes_per_s / 1e9, c.ridge, c.passed)))
    else:
        st.caption(words.plain(words.no_ceilings(data.device_name(a))))
    st.altair_chart(charts.roofline(shown, c), width="stretch")
    st.caption(words.plain(words.points_caption(len(shown), len(pts), dtype)))
    # (the op's kind and calls are the Report's: twelve columns would not fit the page at 1280x800)
    tables.show(pts, {"name": tables.text("op", width="medium"), "shapes": tables.text("input shapes", width="medium"),
                      "device_ms": tables.ms("device (ms)", 3),
                      "flops": tables.flops("FLOPs"),
                      "bytes": tables.nbytes("bytes"), "intensity": tables.number("FLOP/byte"),
                      "tflops": tables.number("TFLOP/s"), "gbps": tables.number("GB/s", 0),
                      "bound": tables.text("bound"), "frac_of_peak": tables.share("of its peak")})
