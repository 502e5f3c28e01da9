"""How the dashboard's tables show their columns: units in the headers, thousands separators, shares as
percentages, long text wrapped (st.column_config). One place, so every page formats a figure the same way.
"""
from __future__ import annotations

import streamlit as st

WRAPPED_ROW_PX = 78        # a row this tall lets a long cell wrap (Streamlit wraps text past 4rem rows)
HEADER_PX = 38


def ms(label: str, decimals: int = 2, help: str | None = None, width: str | None = None):
    return st.column_config.NumberColumn(label, format="localized", step=10 ** -decimals, help=help, width=width)


def us(label: str):
    return st.column_config.NumberColumn(label, format="localized", step=0.1)


def count(label: str):
    return st.column_config.NumberColumn(label, format="localized", step=1)


def number(label: str, decimals: int = 2):
    return st.column_config.NumberColumn(label, format="localized", step=10 ** -decimals)


def share(label: str, width: str | None = None):
    return st.column_config.NumberColumn(label, format="percent", width=width)


def nbytes(label: str):
    return st.column_config.NumberColumn(label, format="bytes")


def text(label: str, width: str | None = None, help: str | None = None):
    return st.column_config.TextColumn(label, width=width, help=help)


def show(frame, columns: dict, wrap: bool = False, **kw):
    """A table of exactly `columns` (name -> column config), in that order; other columns are left out."""
    kw.setdefault("hide_index", True)
    kw.setdefault("width", "stretch")
    if wrap:
        kw.setdefault("row_height", WRAPPED_ROW_PX)
        kw.setdefault("height", HEADER_PX + WRAPPED_ROW_PX * len(frame) + 2)     # every row shown, none scrolled
    return st.dataframe(frame, column_config=columns, column_order=list(columns), **kw)
