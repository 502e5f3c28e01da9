"""A kernel's name cut to a width without losing what it does.

PyTorch's elementwise and reduction kernels are templates whose first hundred characters are the same for every op
(`void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::nat…`): cut there, a copy, a multiply
and an add read alike, and the functor that tells them apart (`direct_copy_kernel_cuda`, `MulFunctor<float>`) is
lost (heldout-user18 swin_a4000: 207 `.contiguous()` copies, 18% of the GPU time, read as an anonymous
elementwise kernel). A long templated name is labelled by its kernel and its functor instead:
`elementwise_kernel<128, 2> of direct_copy_kernel_cuda (a copy)`.
"""
from __future__ import annotations

import re

# The functor inside a TensorIterator kernel's template: a named `*_kernel_cuda` function (direct_copy_kernel_cuda,
# launch_clamp_scalar...), or a `*Functor*` class with its dtype (MulFunctor<float>, CUDAFunctor_add<c10::Half>).
_FUNCTOR = re.compile(r"(\w+_kernel_cuda\w*|\w*Functor\w*|\w+KernelImpl\w*|\w+Ops\b|\w+_kernel_impl\w*)(<[^<>()]*>)?")
# Wrappers around the functor that name no operation of their own.
_WRAPPERS = ("gpu_kernel_impl", "BUnaryFunctor", "BinaryFunctor", "UnaryFunctor", "AUnaryFunctor", "OpaqueType")
_LEADING_NUMBERS = re.compile(r"^<((?:\s*\d+\s*,)*\s*\d+)\s*[,>]")
# What a reader calls the functors whose names are not words.
_ALIAS = {"direct_copy_kernel_cuda": "a copy", "MulFunctor": "a multiply", "CUDAFunctor_add": "an add",
          "CUDAFunctorOnSelf_add": "an add",
          "DivFunctor": "a divide", "AddFunctor": "an add", "FillFunctor": "a fill"}


def _functor(name: str) -> str | None:
    """The first functor in the template other than the generic `gpu_kernel_impl` wrapper."""
    for m in _FUNCTOR.finditer(name):
        if not m.group(1).startswith(_WRAPPERS):
            return m.group(1) + (m.group(2) or "")
    return None


def kernel_label(name: str, width: int = 80) -> str:
    """The name itself when it fits; else 'base<numbers> of functor (alias)' when a functor is in it, else the
    name cut to the width with '…'."""
    if len(name) <= width:
        return name
    functor = _functor(name)
    if functor is not None:
        head = name.removeprefix("void ").split("<", 1)
        base = head[0].split("::")[-1]
        nums = _LEADING_NUMBERS.match("<" + head[1]) if len(head) > 1 else None
        base += f"<{nums.group(1).strip()}>" if nums else ""
        alias = _ALIAS.get(functor.split("<")[0])
        label = f"{base} of {functor}" + (f" ({alias})" if alias else "")
        if len(label) <= width:
            return label
    return name[: width - 1] + "…"
