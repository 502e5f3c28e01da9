"""The words for where in the user's code: a source line, and the ATen ops an Inductor kernel fused.

`the .item() in log_loss (train.py:14)`: the call the user's frame made, the frame's function and where that
function starts (the profiler records each Python frame's first line, not the running line).
"""
from __future__ import annotations

from tracetriage.analyzers.model.units import share
from tracetriage.analyzers.voice.said import claim


def call_words(line) -> str:
    """What the user's line called: '.item()', 'linear()', 'Sequential(...)', 'wrapper()'; '' for its own code."""
    if not line.call and line.call_kind != "module":
        return ""
    if line.call_kind == "method":
        return f"`.{line.call}()`"
    if line.call_kind == "module":
        return f"`{line.call}(...)`" if line.call else "a module's forward"
    return f"`{line.call}()`"


def where(line) -> str:
    """'`log_loss` (train.py:14)': the function and where it starts; '`<module>` (train.py)' where the profiler
    recorded no line (a script's module frame, named `train.py(0): <module>` by some torch versions)."""
    return f"`{line.function}` ({line.file}:{line.line})" if line.line > 0 else f"`{line.function}` ({line.file})"


def source_words(line) -> str:
    """'the `.item()` at train.py:15 in `log_loss`' when the source file gave the call's line; else
    'the `.item()` in `log_loss` (train.py:14)', or '`log_loss` (train.py:14)' for the frame's own code."""
    call = call_words(line)
    if call and line.call_line is not None:
        return f"the {call} at {line.file}:{line.call_line} in `{line.function}`"
    return f"the {call} in {where(line)}" if call else where(line)


def source_clause(line) -> str:
    """The clause a report line ends with when the trace has stacks: '; in your code: the `.item()` in ...'."""
    return f"; in your code: {source_words(line)}" if line is not None else ""


def hotspot_source(lines) -> str:
    """After a hotspot in the Time line: ' from `train_step` (train.py:23)'."""
    return f" from {source_words(lines[0])}" if lines else ""


def fused_words(fk) -> str:
    """'fuses aten add, mul, sigmoid' (from the generated wrapper, or read off the kernel's name)."""
    return f"fuses {', '.join(fk.aten_ops)}" if fk.aten_ops else "fuses ops its name does not list"


def range_clause(held) -> str:
    """'; in your code, by named range: Self-Attention holds 33% of the idle, Add & Norm 1 23%' (held: (name, share)
    pairs, most first; at most three said)."""
    parts = [f"{name} {claim(f'idle.range_share.{i}', x, share(x))}" for i, (name, x) in enumerate(held[:3])]
    first, rest = parts[0].rsplit(" ", 1)
    return f"; in your code, by named range: {first} holds {rest} of the idle" + "".join(f", {p}" for p in parts[1:])
