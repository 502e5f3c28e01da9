"""How the dashboard's tables show their columns: units in the headers, thousands separators, one number of
decimals per column, shares and bytes written as the CLI writes them, long text wrapped, and every table as wide
as the page at a normal window (1280x800), never cut at its right edge. One place, so every page formats a figure
the same way.

Decimals: a column of durations has one number of decimals (Streamlit's `localized` format with a step fixes
them; without one it trims zeros, '625.32' beside '623.096'), and so has every duration column of one table.
Each number column's values are rounded here, as the CLI's f-strings round them: Streamlit cuts a value to its
step's decimals instead ('1.98' for 1.986, where the CLI says 1.99 ms). Shares and bytes are the CLI's own text
(units.share: '13%', '<1%'; units.size), right-aligned: Streamlit's `percent` format trims zeros too ('3.8%' beside
'2.18%') and writes '0.19%' where the CLI says '<1%'.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from tracetriage.analyzers.model import units

WRAPPED_ROW_PX = 78        # a row this tall lets a long cell wrap (Streamlit wraps text past 4rem rows)
HEADER_PX = 38

# The width a table may take: the main column of the wide layout at 1280x800 with the sidebar open (820 px, less
# the table's 1 px borders). A wider window stretches the columns; a narrower one scrolls.
FIT_PX = 818
# Source Sans at the table's 14 px, measured on the pages' screenshots: a header's letter takes ~6.3 px, a cell's
# ~6.8 px (more digits and capitals), and a cell pads 8 px each side.
HEADER_CHAR_PX, CELL_CHAR_PX, PAD_PX = 6.3, 6.8, 16
MIN_FLEX_PX = 90           # a wrapped text column narrower than this wraps a word a line
SELECT_PX = 32             # the row-selection checkbox column of a table that selects
LINE_PX, MAX_LINES = 20, 5  # a wrapped line's height; a cell past five lines is cut (hover shows it whole)
ROWS_SHOWN = 10            # a longer table of wrapped rows scrolls past this many (the roofline's 30 ops)
FLEX = {"medium": 1, "large": 2}   # the share of the leftover width a long-text column takes


@dataclass(frozen=True)
class Formatted:
    """A column shown as text written by a units format (right-aligned, as numbers are)."""
    config: dict
    write: Callable[[float], str]


def ms(label: str, decimals: int = 2, help: str | None = None, width: str | None = None):
    return st.column_config.NumberColumn(label, format="localized", step=10 ** -decimals, help=help, width=width)


def us(label: str):
    return st.column_config.NumberColumn(label, format="localized", step=0.1)


def count(label: str):
    return st.column_config.NumberColumn(label, format="localized", step=1)


def number(label: str, decimals: int = 2):
    return st.column_config.NumberColumn(label, format="localized", step=10 ** -decimals)


def share(label: str, help: str | None = None) -> Formatted:
    """A share of a whole as the CLI writes it: '13%', '<1%' (a share that is there never reads '0%')."""
    return Formatted(st.column_config.TextColumn(label, help=help, alignment="right"), units.share)


def shown(label: str, help: str | None = None):
    """A column the frame already holds as the CLI's text (the idle causes' shares, adding up as the Idle line's)."""
    return st.column_config.TextColumn(label, help=help, alignment="right")


def nbytes(label: str) -> Formatted:
    return Formatted(st.column_config.TextColumn(label, alignment="right"), units.size)


def flops(label: str) -> Formatted:
    return Formatted(st.column_config.TextColumn(label, alignment="right"), units.flop_count)


def text(label: str, width: str | None = None, help: str | None = None):
    return st.column_config.TextColumn(label, width=width, help=help)


def _decimals(config: dict) -> int | None:
    """The decimals a number column shows (its step's), None for any other column."""
    step = config.get("type_config", {}).get("step")
    return max(0, -int(math.floor(math.log10(step)))) if step else None


def _rounded(frame, configs: dict):
    """Each number column's values rounded to the decimals it shows, as Python writes them (the CLI's f-strings):
    Streamlit cuts a value to its step's decimals rather than rounding it, so 1.986 ms read '1.98' in the table
    beside the CLI's and the idle bar's '1.99 ms'."""
    out = {}
    for n, config in configs.items():
        d = _decimals(config)
        if d is not None and getattr(frame[n], "dtype", None) is not None and frame[n].dtype.kind == "f":
            out[n] = [v if math.isnan(v) else float(f"{v:.{d}f}") for v in frame[n]]
    return frame.assign(**out) if out else frame


def _cells(frame, name: str, config: dict) -> list[str]:
    """The column's cells as the browser writes them (near enough to measure them)."""
    decimals = _decimals(config)
    out = []
    for v in frame[name]:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out.append("")
        elif decimals is not None and isinstance(v, (int, float)):
            out.append(f"{v:,.{decimals}f}")
        else:
            out.append(str(v))
    return out


def _fit(frame, columns: dict, selects: bool) -> tuple[dict, int | None]:
    """Each column's width in px so that the table is FIT_PX wide: a short column as wide as its header or its
    longest cell, the long-text columns (width 'medium' or 'large') sharing what is left; and the row height
    their longest cell needs to wrap into its column (None: one line is enough)."""
    natural, flex = {}, {}
    for name, config in columns.items():
        label = config.get("label") or name
        head = len(label) * HEADER_CHAR_PX + PAD_PX
        if config.get("width") in FLEX:
            flex[name] = head
        else:
            longest = max((len(c) for c in _cells(frame, name, config)), default=0)
            natural[name] = math.ceil(max(head, longest * CELL_CHAR_PX + PAD_PX))
    left = FIT_PX - (SELECT_PX if selects else 0) - sum(natural.values())
    weight = sum(FLEX[columns[n]["width"]] for n in flex) or 1
    widths = dict(natural)
    lines = 1
    for name, head in flex.items():
        w = max(MIN_FLEX_PX, math.ceil(head), int(left * FLEX[columns[name]["width"]] / weight))
        widths[name] = w
        per_line = max(1, int((w - PAD_PX) / CELL_CHAR_PX))
        lines = max(lines, *(math.ceil(len(c) / per_line) for c in _cells(frame, name, columns[name]) or [""]))
    rows = None if lines <= 1 else max(WRAPPED_ROW_PX, PAD_PX + LINE_PX * min(lines, MAX_LINES))
    return widths, rows


def show(frame, columns: dict, wrap: bool = False, **kw):
    """A table of exactly `columns` (name -> column config), in that order; other columns are left out. It fits
    the page at 1280x800: long text (a 'medium' or 'large' column) wraps in the width the others leave it, and
    every row is shown whole when any wraps (`wrap` asks for that even when no cell needs it)."""
    frame = frame.assign(**{n: [("" if v is None or (isinstance(v, float) and math.isnan(v)) else c.write(v))
                                for v in frame[n]]
                            for n, c in columns.items() if isinstance(c, Formatted)})
    configs = {n: dict(c.config if isinstance(c, Formatted) else c) for n, c in columns.items()}
    frame = _rounded(frame, configs)
    widths, row_px = _fit(frame, configs, selects=kw.get("on_select", "ignore") != "ignore")
    for n, w in widths.items():
        configs[n]["width"] = w
    kw.setdefault("hide_index", True)
    kw.setdefault("width", "stretch")
    kw.setdefault("placeholder", "")          # a cell with nothing measured is empty, not 'None'
    if wrap or row_px:
        row_px = max(row_px or 0, WRAPPED_ROW_PX)
        kw.setdefault("row_height", row_px)
        kw.setdefault("height", HEADER_PX + row_px * min(len(frame), ROWS_SHOWN) + 2)   # a short table: every row
    return st.dataframe(frame, column_config=configs, column_order=list(columns), **kw)
