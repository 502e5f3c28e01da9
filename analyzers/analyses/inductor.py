"""Inductor kernels back to the ATen ops they fused.

An Inductor kernel is named after what it fused: `triton_poi_fused_add_mul_sigmoid_0` is a pointwise
kernel (poi; red a reduction, per a persistent reduction, tem a template) that fused aten `add`, `mul`
and `sigmoid`, their names sorted and joined by `_` (torch/_inductor/utils.get_fused_kernel_name,
descriptive_names="original_aten", the default). Op names hold underscores of their own
(`sigmoid_backward`, `native_layer_norm`), so the list is split against the ATen vocabulary
(analyzers/model/aten_ops.txt): the split into the fewest known names, in sorted order.

The generated wrapper that launches the kernel says exactly, above each kernel's definition:
    # Topologically Sorted Source Nodes: [mul, add, sigmoid, mul_1], Original ATen: [aten.mul, aten.add, aten.sigmoid]
    triton_poi_fused_add_mul_sigmoid_0 = async_compile.triton('triton_poi_fused_add_mul_sigmoid_0', '''
When that file is present (a trace with stacks names it in its frames: /tmp/torchinductor_USER/ab/cab....py),
its comment is the answer; the source nodes are the FX names from the user's traced code.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

_KERNEL = re.compile(r"^(?:triton|cpp|cutlass|cuda)_([a-z]{3})_fused_(.+?)(?:_\d+)+$")
_KIND = {"poi": "pointwise", "red": "reduction", "per": "persistent reduction", "tem": "template",
         "for": "foreach", "spl": "split scan", "sca": "scan", "mix": "mixed-order reduction"}
_COMMENT = re.compile(r"#.*Source Nodes: \[([^\]]*)\], Original ATen: \[([^\]]*)\]")
_DEFINE = re.compile(r"^(\w+) = async_compile\.\w+\('(\w+)'")
WRAPPER_FRAME = re.compile(r"^(/.*torchinductor_[^(]*\.py)\(\d+\): ")


@dataclass(frozen=True)
class FusedKernel:
    """An Inductor kernel and the ATen ops it fused."""
    kernel: str
    kind: str                    # pointwise, reduction, persistent reduction, template, ...
    aten_ops: tuple[str, ...]    # 'add', 'mul', 'sigmoid' (the aten:: namespace left off)
    source_nodes: tuple[str, ...]   # the FX nodes of the user's traced code (only from the wrapper file)
    from_file: str | None        # the generated wrapper the ops were read from; None: from the kernel's name


@lru_cache(maxsize=1)
def aten_vocabulary() -> frozenset[str]:
    text = (Path(__file__).resolve().parent.parent / "model" / "aten_ops.txt").read_text(encoding="utf-8")
    return frozenset(x for x in text.split() if not x.startswith("#") and x)


def is_inductor_kernel(name: str) -> bool:
    return _KERNEL.match(name) is not None


def split_ops(fused: str, vocab: frozenset[str]) -> tuple[str, ...]:
    """'add_mul_sigmoid_sigmoid_backward' -> ('add', 'mul', 'sigmoid', 'sigmoid_backward'): the fewest known
    names, a word the vocabulary does not know standing alone; among equals, the split in sorted order."""
    words = fused.split("_")
    # leading underscores belong to the next name (_unsafe_view): rejoin empty words with their successor
    tokens: list[str] = []
    carry = ""
    for w in words:
        if w == "":
            carry += "_"
            continue
        tokens.append(carry + w)
        carry = ""
    n = len(tokens)
    best: list[tuple[int, int, tuple[str, ...]] | None] = [None] * (n + 1)
    best[0] = (0, 0, ())
    for i in range(n):
        if best[i] is None:
            continue
        cost, unknown, got = best[i]
        for j in range(i + 1, min(n, i + 8) + 1):
            name = "_".join(tokens[i:j])
            known = name in vocab
            if not known and j > i + 1:
                continue
            cand = (cost + 1, unknown + (not known), got + (name,))
            if best[j] is None or _better(cand, best[j]):
                best[j] = cand
    return best[n][2] if best[n] else tuple(tokens)


def _better(a, b) -> bool:
    """Fewer unknown words, then fewer names, then a sorted split (Inductor sorts the names it joins)."""
    ka = (a[1], a[0], list(a[2]) != sorted(a[2]))
    kb = (b[1], b[0], list(b[2]) != sorted(b[2]))
    return ka < kb


def from_name(kernel: str) -> FusedKernel | None:
    m = _KERNEL.match(kernel)
    if m is None:
        return None
    return FusedKernel(kernel, _KIND.get(m.group(1), m.group(1)), split_ops(m.group(2), aten_vocabulary()), (), None)


def wrapper_paths(names: list[str]) -> list[str]:
    """The generated wrappers a trace with stacks names in its frames."""
    return sorted({m.group(1) for n in names if "torchinductor_" in n for m in [WRAPPER_FRAME.match(n)] if m})


def from_wrapper(text: str) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """kernel name -> (ATen ops, source nodes), from a generated wrapper's comments."""
    out = {}
    last = None
    for line in text.splitlines():
        m = _COMMENT.search(line)
        if m:
            last = m
            continue
        d = _DEFINE.match(line)
        if d and last is not None:
            nodes = tuple(x.strip() for x in last.group(1).split(",") if x.strip())
            ops = tuple(x.strip().removeprefix("aten.") for x in last.group(2).split(",") if x.strip())
            out[d.group(2)] = (ops, nodes)
            last = None
    return out


def fused_kernels(kernels: list[str], wrappers: dict[str, str]) -> dict[str, FusedKernel]:
    """Each Inductor kernel among `kernels` with the ops it fused: from a wrapper's comment when one of the
    texts (path -> text) defines it, else from its name."""
    told = {}
    for path, text in wrappers.items():
        for k, v in from_wrapper(text).items():
            told.setdefault(k, (path, v))
    out = {}
    for k in kernels:
        base = from_name(k)
        if base is None:
            continue
        if k in told:
            path, (ops, nodes) = told[k]
            base = FusedKernel(k, base.kind, ops, nodes, path)
        out[k] = base
    return out
