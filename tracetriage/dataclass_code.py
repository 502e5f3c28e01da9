"""Our dataclasses' generated methods, compiled once per Python and kept beside the bytecode.

Python's dataclasses write each class's __init__, __repr__, __eq__, __hash__ (a frozen one's __setattr__ and
__delattr__ too) as source text and compile it every time the class is made. `tracetriage report` makes 184
dataclasses as it imports: 1,089 compilations, 0.10 s of its 0.25 s of imports on Python 3.11, all of it holding
the interpreter's lock while the read-ahead thread needs it to decode the trace (the imports are the longer of the
two on the 293 MB benchmark trace). Python keeps a module's bytecode in __pycache__, never these methods'.

Here the code each such text compiles to is kept in one file in this package's __pycache__ (marshal, as a .pyc
holds a module's, headed by the Python's magic number) and looked up by the exact text: a class made from the same
text gets the code the compiler gives it, any other text is compiled as before and its code added, and the file is
written again when the process ends (not where Python writes no bytecode: `-B`, PYTHONDONTWRITEBYTECODE). Only the
classes of our own modules are looked up; the exec of any other module's class is Python's own. The command line
installs it (tracetriage.cli), once its read-ahead has started: the file's 1.4 MB take ~0.03 s to read.
"""
from __future__ import annotations

import atexit
import builtins
import dataclasses
import importlib.util
import marshal
import os
import sys
from types import CodeType

_OURS = "tracetriage."
MAX_KEPT = 20_000    # texts (~1,300 B of the file each): the report's classes make 1,089, the dashboard's a few more
_HEAD = importlib.util.MAGIC_NUMBER
_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__",
                     f"dataclass_code.{sys.implementation.cache_tag}.opt{sys.flags.optimize}.marshal")

_codes: dict[str, CodeType] | None = None     # text -> its code, read from _PATH on the first class of ours
_added: dict[str, CodeType] = {}              # compiled by this process, not in the file yet


def install() -> None:
    """Route dataclasses' exec of a method's text through the kept code (once per process; a no-op where the
    dataclasses module execs nothing by that name, as Python 3.13 does)."""
    if getattr(dataclasses, "exec", None) is _exec or not hasattr(dataclasses, "_create_fn"):
        return
    # a global of the dataclasses module, found there before the builtin of that name
    dataclasses.exec = _exec   # type: ignore[attr-defined]
    atexit.register(_write)


def _exec(source, globals=None, locals=None, /):
    if isinstance(source, str) and isinstance(globals, dict) and str(globals.get("__name__", "")).startswith(_OURS):
        source = _code(source)
    return builtins.exec(source, globals, locals)


def _code(text: str) -> CodeType:
    global _codes
    if _codes is None:
        _codes = _read()
    code = _codes.get(text)
    if code is None:
        # as dataclasses' own exec compiles it: no future statement inherited (dataclasses.py has none)
        code = _codes[text] = _added[text] = compile(text, "<string>", "exec", dont_inherit=True)
    return code


def _read() -> dict[str, CodeType]:
    # The file read whole, then unmarshalled from memory: marshal.load(file) reads the 1.5 MB in thousands of small
    # reads, one per string and code object, through the file object's methods: 37 ms of CPU against 6 ms, with
    # the interpreter's lock held while the read-ahead thread waits for it
    try:
        with open(_PATH, "rb") as f:
            data = f.read()
        if data[:len(_HEAD)] != _HEAD:
            return {}
        codes = marshal.loads(memoryview(data)[len(_HEAD):])
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    return codes if isinstance(codes, dict) else {}


def _write() -> None:
    """The file with this process's new codes added, written whole and renamed into place (a report beside it
    reads either file whole). Not from a forked child: it ends with os._exit, which runs no exit handler."""
    if not _added or sys.dont_write_bytecode or _codes is None:
        return
    import tempfile

    try:
        os.makedirs(os.path.dirname(_PATH), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(_PATH), prefix=".dataclass_code.")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_HEAD)
                kept = _read()
                # (a file that grew past any one version's classes, edit after edit of them: begun again)
                marshal.dump({**(kept if len(kept) < MAX_KEPT else {}), **_added}, f)
            os.chmod(tmp, 0o644)     # (as Python's own .pyc files)
            os.replace(tmp, _PATH)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, ValueError):
        return
    _added.clear()
