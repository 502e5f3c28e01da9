"""Reading a user's answer file (TOML), refusing a malformed one with the line to fix.

    cause = "synchronization"
    pattern = "a drain after every .item()"
    experiment = "keep the flag on the device, read it every 100 steps"

Keys are the drill's parts (tracetriage.drills.bank.PARTS); a missing part is a blank answer (it scores 0).
Bad TOML, an unknown key, or a value of the wrong type raises AnswerError, naming the line.
"""
from __future__ import annotations

import re
from pathlib import Path

from tracetriage.drills.amounts import amounts
from tracetriage.drills.bank import NAMES, NUMBER, TEXT, Drill
from tracetriage.drills.tomlread import tomllib


class AnswerError(Exception):
    """A malformed answer file: one line for the user, naming the file and the line."""


def _line_of(text: str, key: str) -> int | None:
    pat = re.compile(rf'^\s*(?:{re.escape(key)}|"{re.escape(key)}"|\'{re.escape(key)}\')\s*[=.]')
    for i, line in enumerate(text.splitlines(), 1):
        if pat.match(line):
            return i
    pat = re.compile(rf'^\s*\[+\s*{re.escape(key)}\s*[\].]')   # a table header [key]
    for i, line in enumerate(text.splitlines(), 1):
        if pat.match(line):
            return i
    return None


def _where(path: Path, text: str, key: str) -> str:
    n = _line_of(text, key)
    return f"{path}, line {n}" if n else str(path)


def read(path: str | Path, drill: Drill) -> dict:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise AnswerError(f"no answer file {path}") from None
    except (IsADirectoryError, PermissionError) as e:
        raise AnswerError(f"cannot read the answer file {path}: {e.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise AnswerError(f"{path}, line {line}: not UTF-8 text") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
        where = f"{path}, line {m.group(1)}" if m else str(path)
        reason = re.sub(r" \(at .*\)$", "", msg)
        raise AnswerError(f"{where}: not valid TOML: {reason}") from None
    parts = drill.parts
    out = {}
    for key, value in doc.items():
        if key not in parts:
            raise AnswerError(f"{_where(path, text, key)}: unknown key {key!r} for drill {drill.id} "
                              f"(its keys: {', '.join(parts)})")
        kind = parts[key][0]
        out[key] = _typed(path, text, key, value, kind)
    return out


def _typed(path: Path, text: str, key: str, value, kind: str):
    # a line or op named by its number, as the templates allow ("their numbers or line_N names"): `views = [2, 4]`,
    # `hurts = 3` are the names "2", "4", "3" (a free-text part stays text: `pattern = 3` is an error)
    if kind == NAMES:
        value = [_named(v) for v in value] if isinstance(value, list) else _named(value)
    bad = None
    if kind == TEXT and not isinstance(value, str):
        bad = "a string"
    elif kind == NAMES and not (isinstance(value, str) or (isinstance(value, list)
                                                           and all(isinstance(v, str) for v in value))):
        bad = "a string or a list of strings"
    elif kind == NUMBER:
        if isinstance(value, str):
            if not amounts(value):
                raise AnswerError(f"{_where(path, text, key)}: {key!r} must hold a number (1.7, or with its unit: "
                                  f"\"0.79 PFLOP/s\"), not {value!r}")
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            bad = "a number"
        elif value != value or value in (float("inf"), float("-inf")):
            bad = "a finite number"
    if bad:
        raise AnswerError(f"{_where(path, text, key)}: {key!r} must be {bad}, not {_type_name(value)}")
    return float(value) if kind == NUMBER and not isinstance(value, str) else value


def _named(v):
    return str(v) if isinstance(v, int) and not isinstance(v, bool) else v


def _type_name(v) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "a table"}.get(type(v), type(v).__name__)
