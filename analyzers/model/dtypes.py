"""Dtypes as Kineto writes them, in canonical names, with their sizes.

"Input type" holds C++ type names ("c10::BFloat16", "float"); torch spells them "torch.bfloat16";
every layer speaks of "bf16", "fp32" ... `tf32` is a math mode, stored as fp32.
"""
from __future__ import annotations

# Kineto writes C++ type names in "Input type" (found by profiling every torch dtype
# with record_shapes=True under torch 2.13). Canonical names on the right.
_KINETO_DTYPES = {
    "double": "fp64",
    "float": "fp32",
    "c10::Half": "fp16",
    "c10::BFloat16": "bf16",
    "c10::Float8_e4m3fn": "fp8",
    "c10::Float8_e5m2": "fp8",
    "c10::Float8_e4m3fnuz": "fp8",
    "c10::Float8_e5m2fnuz": "fp8",
    "c10::Float8_e8m0fnu": "fp8",
    "c10::Float4_e2m1fn_x2": "fp4x2",  # two fp4 values packed in one byte per element
    "long int": "int64",
    "long long int": "int64",  # not seen on Linux; harmless
    "int": "int32",
    "short int": "int16",
    "signed char": "int8",
    "unsigned char": "uint8",
    "short unsigned int": "uint16",
    "unsigned int": "uint32",
    "long unsigned int": "uint64",
    "bool": "bool",
    "c10::complex<c10::Half>": "complex32",
    "c10::complex<float>": "complex64",
    "c10::complex<double>": "complex128",
    "c10::qint8": "qint8",
    "c10::quint8": "quint8",
    "c10::qint32": "qint32",
}

# torch-style spellings, accepted so callers can pass "bfloat16" or "torch.float16".
_TORCH_DTYPES = {
    "float64": "fp64", "double": "fp64",
    "float32": "fp32", "float": "fp32",
    "float16": "fp16", "half": "fp16",
    "bfloat16": "bf16",
    "float8_e4m3fn": "fp8", "float8_e5m2": "fp8",
    "float8_e4m3fnuz": "fp8", "float8_e5m2fnuz": "fp8", "float8_e8m0fnu": "fp8",
    "int64": "int64", "long": "int64",
    "int32": "int32", "int": "int32",
    "int16": "int16", "short": "int16",
    "int8": "int8", "uint8": "uint8",
    "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "bool": "bool",
    "complex64": "complex64", "complex128": "complex128", "complex32": "complex32",
}

# c10::ScalarType names, as the collectives' metadata ("dtype": "BFloat16", "Byte") writes them, where they are
# no torch spelling already ("BFloat16", "Float", "Half", "Long" ... are).
_SCALAR_TYPE_NAMES = {"Byte": "uint8", "Char": "int8", "ComplexHalf": "complex32", "ComplexFloat": "complex64",
                      "ComplexDouble": "complex128", "QInt8": "qint8", "QUInt8": "quint8", "QInt32": "qint32"}

# Bytes per element of each canonical dtype. `tf32` is a math mode, stored as fp32.
DTYPE_BYTES: dict[str, int] = {
    "fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "fp4x2": 1,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1,
    "uint64": 8, "uint32": 4, "uint16": 2, "uint8": 1,
    "bool": 1,
    "complex128": 16, "complex64": 8, "complex32": 4,
    "qint8": 1, "quint8": 1, "qint32": 4,
}

FLOAT_DTYPES = frozenset({"fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "fp4x2"})

# c10::ScalarType enum values, as they appear in "Concrete Inputs" for dtype arguments
# (e.g. aten::to(x, 15) converts to bfloat16). From c10/core/ScalarType.h.
SCALAR_TYPE_CODES: dict[int, str] = {
    0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "fp16", 6: "fp32",
    7: "fp64", 8: "complex32", 9: "complex64", 10: "complex128", 11: "bool",
    12: "qint8", 13: "quint8", 14: "qint32", 15: "bf16", 23: "fp8", 24: "fp8",
    25: "fp8", 26: "fp8", 27: "uint16", 28: "uint32", 29: "uint64", 44: "fp8",
    45: "fp4x2",
}


def normalise_dtype(s: object) -> str | None:
    """Canonical dtype name for a Kineto "Input type" string, or None.

    None means "not a tensor dtype": "" (a None argument), "Scalar", "ScalarList",
    "TensorList", "GenericList", or anything unknown. Canonical names are accepted
    unchanged, and so are torch spellings ("bfloat16", "torch.float16").
    """
    if not isinstance(s, str):
        return None
    s = s.strip()
    if s in _KINETO_DTYPES:
        return _KINETO_DTYPES[s]
    if s in _SCALAR_TYPE_NAMES:
        return _SCALAR_TYPE_NAMES[s]
    if s in DTYPE_BYTES:
        return s
    low = s.lower()
    if low.startswith("torch."):
        low = low[len("torch."):]
    return _TORCH_DTYPES.get(low)
