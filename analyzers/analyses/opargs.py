"""The arguments of one op as torch.profiler records them, parsed for the cost models (analyses.opcost).

"Input Dims", "Input type" and "Concrete Inputs" hold one entry per argument (see opcost's docstring for
what each holds); `parse_args` turns them into `Arg`s, and the helpers below read a tensor, a concrete
scalar, a list of ints or a dtype from them, raising `Malformed` where the trace holds something else
(the op then has no cost, never a wrong one). Also: broadcasting and dtype promotion of the result.

Pure Python, no torch import.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tracetriage.analyzers.model.dtypes import DTYPE_BYTES, FLOAT_DTYPES, SCALAR_TYPE_CODES, normalise_dtype


class Malformed(Exception):
    pass


@dataclass(frozen=True)
class Arg:
    kind: str  # 'tensor' | 'tensorlist' | 'other'
    dims: tuple  # tensor: tuple of ints; tensorlist: tuple of tuples; other: ()
    dtype: str | None  # tensor: canonical dtype; tensorlist/other: None
    concrete: str  # value from "Concrete Inputs", "" when absent
    type: str  # the raw "Input type" string ("Scalar", "ScalarList", "", ...)

    @property
    def numel(self) -> int:
        return math.prod(self.dims) if self.kind == "tensor" else 0

    @property
    def nbytes(self) -> int:
        return self.numel * bytes_of(self.dtype) if self.kind == "tensor" else 0


def shape_of(x: object) -> tuple[int, ...]:
    if not isinstance(x, list):
        raise Malformed
    for d in x:
        if isinstance(d, bool) or not isinstance(d, int) or d < 0:
            raise Malformed
    return tuple(x)


def parse_args(input_dims: object, input_types: object, concrete: object) -> list[Arg]:
    if not isinstance(input_dims, list) or not isinstance(input_types, list):
        raise Malformed
    if len(input_dims) != len(input_types):
        raise Malformed
    if not isinstance(concrete, list) or len(concrete) != len(input_types):
        concrete = [""] * len(input_types)
    args = []
    for dims, typ, value in zip(input_dims, input_types, concrete):
        if not isinstance(typ, str):
            raise Malformed
        value = value if isinstance(value, str) else ""
        dtype = normalise_dtype(typ)
        if dtype is not None:
            args.append(Arg("tensor", shape_of(dims), dtype, value, typ))
        elif typ == "TensorList":
            if not isinstance(dims, list):
                raise Malformed
            args.append(Arg("tensorlist", tuple(shape_of(d) for d in dims), None, value,
                             typ))
        else:
            # Scalars, None, lists, dtypes of unknown tensors: no shape to use.
            if not isinstance(dims, list):
                raise Malformed
            args.append(Arg("other", (), None, value, typ))
    return args


def bytes_of(dtype: str | None) -> int:
    return DTYPE_BYTES.get(dtype or "", 4)


def tensor_at(args: list[Arg], i: int) -> Arg | None:
    return args[i] if i < len(args) and args[i].kind == "tensor" else None


def need(args: list[Arg], i: int, ndim: int | None = None) -> Arg:
    t = tensor_at(args, i)
    if t is None or (ndim is not None and len(t.dims) != ndim):
        raise Malformed
    return t


def concrete(args: list[Arg], i: int) -> str:
    return args[i].concrete.strip() if i < len(args) else ""


def concrete_bool(args: list[Arg], i: int) -> bool | None:
    value = concrete(args, i)
    return {"True": True, "False": False}.get(value)


def as_int(x) -> int | None:
    """One Concrete Inputs entry as an int ("-1" -> -1), None where it is not one ("", None, "[0, 2]")."""
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def concrete_ints(args: list[Arg], i: int) -> list[int] | None:
    """"[0, 2]" -> [0, 2]; "1" -> [1]; "" -> None (not recorded)."""
    value = concrete(args, i)
    if not value:
        return None
    try:
        if value.startswith("[") and value.endswith("]"):
            inner = value[1:-1].strip()
            return [int(v) for v in inner.split(",")] if inner else []
        return [int(value)]
    except ValueError:
        return None


def concrete_dtype(args: list[Arg], i: int) -> str | None:
    codes = concrete_ints(args, i)
    if codes and len(codes) == 1 and not concrete(args, i).startswith("["):
        return SCALAR_TYPE_CODES.get(codes[0])
    return None


def broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(-ndim, 0):
        sizes = {s[axis] for s in shapes if len(s) >= -axis} - {1}
        if len(sizes) > 1:
            raise Malformed
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


PROMOTION = ["bool", "uint8", "int8", "int16", "int32", "int64",
              "fp8", "bf16", "fp16", "fp32", "fp64"]


def result_dtype(tensors: list[Arg]) -> str:
    """Output dtype of an elementwise op, after torch's promotion, roughly.

    Dimensioned tensors decide; 0-dim tensors (wrapped Python numbers) only decide when
    nothing else does. fp16 with bf16 gives fp32. Unranked dtypes keep the first.
    """
    ranked = [t for t in tensors if t.dims] or tensors
    dtypes = [t.dtype for t in ranked]
    if not dtypes:
        return "fp32"
    if "fp16" in dtypes and "bf16" in dtypes and not {"fp32", "fp64"} & set(dtypes):
        return "fp32"
    known = [d for d in dtypes if d in PROMOTION]
    if not known:
        return dtypes[0]
    return max(known, key=PROMOTION.index)


def main_dtype(tensors: list[Arg]) -> str:
    floats = [t for t in tensors if t.dtype in FLOAT_DTYPES and t.dims]
    chosen = floats or [t for t in tensors if t.dims] or tensors
    return chosen[0].dtype if chosen else "fp32"
