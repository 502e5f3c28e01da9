"""Finds the numbers a user reads that are not in the one number format (analyzers/model/units.py).

Scans words only: a report's text, markdown and HTML, and the string fields of a --json object (its
numbers are numbers, exempt). Three kinds of slip:

- a count without thousands separators: a bare integer of 1,000 or more ('22270 kernels');
- a float with more than three decimals ('319.6803125 µs');
- the wrong article before a number: 'a 8', 'a 11.29× speedup', 'a 18.6 ms span', 'a 80', 'an 110'.

A number inside a word is not a number the user reads as one: identifiers (thread 2557), paths, kernel names and
their template arguments, shapes (2048x4096, [1024, 64x4096]), dates (2026-12-01) and versions (2.13.0) are left alone.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass

# A token is what whitespace separates; the punctuation that wraps a number in a sentence is peeled off.
_WRAP = "()[]{}\"'`;:,.!?*|"
# a number as a sentence writes it: a sign, digits with or without separators, decimals, a glued unit mark
_NUMBER = re.compile(r"^[−+\-]?(?P<int>\d[\d,]*)(?:\.(?P<dec>\d+))?(?:×|%|x)?$")
# '1234-token prompt': the number before a hyphenated word is still a number ('2026-12-01' is not)
_HYPHEN_WORD = re.compile(r"^(\d[\d,]*)-[A-Za-z]")
_SEPARATED = re.compile(r"^\d{1,3}(?:,\d{3})*$")

# the number's sound: eight..., eleven, eighteen (and their thousands, millions) take "an"
_WANTS_AN = re.compile(r"^(?:8|1[18](?![\d])|1[18],)")
_ARTICLE = re.compile(r"(?<![\w'’-])(?P<art>[Aa]n?) (?P<num>\d[\d,.]*)")


# a number after these names a thing, it counts nothing: 'host thread 2557', 'stream 7', 'rank 12', 'step 1024',
# 'GeForce RTX 2080 Ti'
ID_WORDS = frozenset({"thread", "tid", "pid", "stream", "rank", "port", "step", "device", "seed", "line", "#",
                      "rtx", "gtx"})


@dataclass(frozen=True)
class Slip:
    kind: str      # "unseparated" | "decimals" | "article"
    text: str      # the offending words
    where: str     # the line around it

    def __str__(self) -> str:
        return f"{self.kind}: {self.text!r} in {self.where!r}"


def _numeric(token: str) -> str | None:
    token = token.strip(_WRAP)
    m = _HYPHEN_WORD.match(token)
    if m:
        return m.group(1)
    return token if _NUMBER.match(token) else None


_CODE = re.compile(r"`[^`\n]*`")                        # markdown code: a name as written
_TEMPLATE = re.compile(r"<[^<>\n]*(?:>|…)")              # a kernel's template arguments, or their cut-off start
_SHAPES = re.compile(r"\[[\dx, ]*\]")                   # an op's input shapes: [1024, 64x4096]


def names_out(line: str) -> str:
    """The line without the names it quotes: code spans and template arguments (innermost first)."""
    line = _SHAPES.sub(" ", _CODE.sub(" ", line))
    while True:
        shorter = _TEMPLATE.sub(" ", line)
        if shorter == line:
            return line
        line = shorter


def number_slips(text: str) -> list[Slip]:
    """Every slip in `text` (words; HTML tags are read as text around them, not scanned for numbers)."""
    text = html.unescape(re.sub(r"<[^<>]*>", " ", text)) if "</" in text else text
    out = []
    for line in map(names_out, text.splitlines()):
        before = ""
        for token in line.split():
            num, said_after, before = _numeric(token), before, token.strip(_WRAP).lower()
            if num is None or said_after in ID_WORDS:
                continue
            m = _NUMBER.match(num)
            whole = m.group("int").rstrip(",")
            if len(whole.replace(",", "")) >= 4 and not _SEPARATED.match(whole):
                out.append(Slip("unseparated", token, line.strip()))
            elif "," in whole and not _SEPARATED.match(whole):
                out.append(Slip("unseparated", token, line.strip()))
            if m.group("dec") and len(m.group("dec")) > 3:
                out.append(Slip("decimals", token, line.strip()))
        for m in _ARTICLE.finditer(line):
            wants_an = bool(_WANTS_AN.match(m.group("num")))
            if (m.group("art").lower() == "an") != wants_an:
                out.append(Slip("article", m.group(0), line.strip()))
    return out


# JSON string fields that hold names, paths and ids, not sentences (their digits are the name's); `code`: a line of
# the user's code as written (the text output quotes it in backticks)
NAME_KEYS = frozenset({"name", "names", "path", "file", "files", "trace", "kernel", "op", "id", "shapes", "code",
                       "device", "device_name", "hta_version", "version", "schema", "url", "source"})


def json_words(obj, key: str | None = None):
    """The sentences in a --json object: its string fields, names and paths aside."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from json_words(v, k)
    elif isinstance(obj, list):
        for v in obj:
            yield from json_words(v, key)
    elif isinstance(obj, str) and key not in NAME_KEYS:
        yield obj
