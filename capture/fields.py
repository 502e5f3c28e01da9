"""The fields of a workload that `capture PRESET --set KEY=VALUE` may set: names, types, defaults.

A value is checked against its field's annotation by msgspec (an int field takes 4096, not "abc"; a
Literal field one of its values; `shapes` a list of [M, N, K]) before anything runs, so a bad --set
is one line naming the key, what it takes and every field with its default, not a TypeError from
the dataclass's __init__ or a KeyError deep in setup(). No torch here: only dataclasses and typing.
"""
from __future__ import annotations

import dataclasses
import difflib
import json
import typing
from dataclasses import dataclass

import msgspec

NOT_SETTABLE = {"device": "--device cpu|cuda sets it"}


class FieldError(Exception):
    """A --set the workload cannot take: one line for the user."""


@dataclass(frozen=True)
class Field:
    name: str
    type: object          # the resolved annotation: int, str, Literal[...], list[tuple[int, int, int]]
    default: object


def settable(klass: type) -> list[Field]:
    """The dataclass fields of a workload class that --set may change, in declaration order."""
    hints = typing.get_type_hints(klass)
    out = []
    for f in dataclasses.fields(klass):
        if f.name in NOT_SETTABLE:
            continue
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default
        out.append(Field(f.name, hints[f.name], default))
    return out


def type_words(t: object) -> str:
    """What a field takes, in the user's words."""
    if typing.get_origin(t) is typing.Literal:
        return "one of " + ", ".join(str(v) for v in typing.get_args(t))
    simple = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}
    if t in simple:
        return simple[t]
    if t == list[tuple[int, int, int]]:
        return "a list of [M, N, K] triples, e.g. [[64,64,64],[1,256,256]]"
    return f"a JSON value of type {t}"


def shown(value: object) -> str:
    """A value as the user would type it after --set KEY= (JSON, but a plain string bare)."""
    return value if isinstance(value, str) else json.dumps(value)


def listing(defaults: dict) -> str:
    return ", ".join(f"{k}={shown(v)}" for k, v in defaults.items())


def check(klass: type, values: dict, *, who: str, defaults: dict, where: str) -> dict:
    """values, each converted to its field's type. FieldError (one line) for an unknown key or a value of
    the wrong type; `defaults` (the fields with the values this preset runs with `where`, e.g. "on cpu")
    are listed in it."""
    fields = {f.name: f for f in settable(klass)}
    out = {}
    for key, value in values.items():
        if key in NOT_SETTABLE:
            raise FieldError(f"{who}: --set {key} is not a field to set ({NOT_SETTABLE[key]})")
        if key not in fields:
            close = difflib.get_close_matches(key, fields, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise FieldError(f"{who} has no field {key!r}{hint}; its fields, with their defaults {where}: "
                             f"{listing(defaults)}")
        f = fields[key]
        try:
            out[key] = msgspec.convert(value, f.type)
        except msgspec.ValidationError:
            raise FieldError(f"{who}: --set {key}={shown(value)}: {key} takes {type_words(f.type)}; its fields, "
                             f"with their defaults {where}: {listing(defaults)}") from None
    return out
