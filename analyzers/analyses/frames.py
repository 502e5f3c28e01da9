"""Where in the user's code: the user's own Python frame behind a host call, a hotspot, an idle gap.

Only a trace recorded with stacks (torch.profiler's `with_stack=True`) has them: one `python_function`
event per Python call, nested per thread, named `FILE(LINE): FUNCTION` (FILE as the profiler trims it
to its sys.path entry: `train.py`, `torch/nn/modules/module.py`; LINE is the function's first line,
its `co_firstlineno`, not the line that was running) or `<built-in method item of Tensor object at
0x...>` for a call into C.

The user's own frame at a moment on a thread is the innermost frame there that is not a library's
(the standard library, torch and the ML libraries, generated code such as Inductor's, this tool's
capture harness) and not a built-in. What that frame called on the way down (`.item()`, `linear`, a
library function) is kept with it: it names the line's call when the line itself is not recorded.
"""
from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, replace

import numpy as np

from tracetriage.analyzers.analyses.frame_labels import mislabelled
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.names import name_codes
from tracetriage.analyzers.model.trace import NONE, PYTHON, Trace

# Top-level packages whose frames are never the user's own (beside the standard library).
LIBRARIES = frozenset({
    "torch", "torchvision", "torchaudio", "torchtext", "torchrec", "torchtitan", "torchao", "functorch", "torchgen",
    "triton", "numpy", "scipy", "pandas", "sklearn", "PIL", "cv2", "transformers", "tokenizers", "datasets",
    "accelerate", "peft", "diffusers", "timm", "safetensors", "huggingface_hub", "vllm", "sglang", "deepspeed",
    "megatron", "apex", "flash_attn", "xformers", "einops", "lightning", "pytorch_lightning", "lightning_fabric",
    "fairscale", "fbgemm_gpu", "bitsandbytes", "tqdm", "jax", "jaxlib", "typing_extensions", "_pytest", "pytest",
    "IPython", "ipykernel", "tornado", "zmq", "traitlets", "hydra", "omegaconf", "wandb", "tensorboard", "mlflow",
    "flashinfer", "sgl_kernel", "aiter", "liger_kernel", "tensorrt", "tensorrt_llm", "torch_tensorrt", "modelopt",
    "cutlass", "nvtx", "onnx", "onnxruntime", "torch_xla", "mmcv", "mmengine", "detectron2", "fvcore", "ultralytics",
})
# This tool's own harness around a user's script: its frames are not the user's code.
HARNESS_FILES = ("capture/script.py", "capture/harness.py", "capture/workload.py", "tracetriage/notebook.py",
                 "tracetriage/facade.py")
# Inductor's generated wrappers and kernels: /tmp/torchinductor_USER/..., a debug dump's output_code.py, and the
# caches a serving engine keeps them in (vLLM: ~/.cache/vllm/torch_compile_cache/HASH/rank_0_0/inductor_cache/..);
# nothing the user edits (heldout-user9 vllm_h100: 'in your code: the assert_size_stride() in call (...inductor_cache
# /lh/clhg...py:428)')
GENERATED = ("torchinductor_", "/inductor_cache/", "/torch_compile_cache/", "torch/_inductor/", "output_code.py")
_FRAME = re.compile(r"^(.*)\((\d+)\): (.*)$")
_BUILTIN = re.compile(r"^<built-in (method|function) ([^ >]+)(?: of (\w+) object)?")
_MODULE = re.compile(r"^nn\.Module: ([A-Za-z_]\w*?)(?:_\d+)?$")
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))


@dataclass(frozen=True)
class SourceLine:
    """A frame of the user's own code and what the events charged to it hold."""
    file: str            # as the trace records it (trimmed to sys.path by the profiler): train.py, pkg/model.py
    line: int            # the function's first line (co_firstlineno): the profiler records no running line
    function: str
    call: str | None     # what the frame called there: 'item', 'linear', a library function; None: its own code
    call_kind: str | None   # 'method' (Tensor.item), 'function' (a built-in), 'module' (nn.Module), 'python'
    count: int           # the events charged to it (launches, calls, gaps)
    us: float            # the time charged to it (device time, or idle time)
    call_line: int | None = None   # the line in that function that makes the call, read from the source
                                   # file when it is present (refine); None: the file was not found, or no
                                   # line of the function names the call


@dataclass(frozen=True)
class Stacks:
    """The python_function events of a trace as a forest per thread, sorted by start."""
    start: np.ndarray    # int64 ns, one per python_function event
    end: np.ndarray
    name: np.ndarray     # int32 index into Trace.names
    parent: np.ndarray   # position of the enclosing frame, NONE at the top
    user: np.ndarray     # position of the innermost user frame at or above it, NONE if none
    callee: np.ndarray   # position of the frame that user frame called on the way down to it, NONE if itself
    by_tid: dict         # tid -> positions, sorted by start


def parse(name: str) -> tuple[str, int, str] | None:
    """`train.py(84): log_loss` -> ('train.py', 84, 'log_loss'); None for a built-in or a module marker."""
    m = _FRAME.match(name)
    return (m.group(1), int(m.group(2)), m.group(3)) if m else None


def is_library(file: str) -> bool:
    """A frame no user wrote: a built-in, generated code, the standard library, an ML library, the harness."""
    path = file.replace("\\", "/")
    if path.startswith("<") or any(g in path for g in GENERATED) or path.endswith(HARNESS_FILES):
        return True
    if "/site-packages/" in path or "/dist-packages/" in path or re.search(r"/lib(64)?/python3[.\d]*/", path):
        return True   # an untrimmed path into an installed package or the standard library
    if path.startswith("/"):
        return False
    top = path.split("/", 1)[0]
    module = top[:-3] if top.endswith(".py") else top
    return module in _STDLIB or module in LIBRARIES


def is_user_frame(name: str) -> bool:
    p = parse(name)
    return p is not None and not is_library(p[0])


def call_of(name: str) -> tuple[str | None, str | None]:
    """What a non-user frame is, as the user's line called it: ('item', 'method'), ('linear', 'function')."""
    m = _BUILTIN.match(name)
    if m:   # a method of a type object (torch.tensor, torch.rsqrt) is called as a function
        return m.group(2), "function" if m.group(1) == "function" or m.group(3) == "type" else "method"
    m = _MODULE.match(name)
    if m:
        return m.group(1), "module"
    p = parse(name)
    if p is None:
        return None, None
    func = p[2]
    if func in ("_call_impl", "_wrapped_call_impl"):
        return None, "module"      # calling an nn.Module: its class is not in the frame's name
    return func, "python"


def index(trace: Trace) -> Stacks | None:
    """The trace's Python frames as a forest per thread; None when it was recorded without stacks."""
    ev = trace.ev
    rows = np.flatnonzero(ev.cat == PYTHON)
    if len(rows) == 0:
        return None
    ids, inv = name_codes(trace, rows)
    user_name = np.array([is_user_frame(trace.names[i]) for i in ids], dtype=bool)
    is_user = user_name[inv.ravel()].tolist()
    start, end, tid = ev.start[rows], ev.end[rows], ev.tid[rows]
    n = len(rows)
    parent, user, callee = [NONE] * n, [NONE] * n, [NONE] * n
    by_tid = {}
    s_list, e_list = start.tolist(), end.tolist()
    for t in distinct(tid):
        pos = np.flatnonzero(tid == t)   # rows are sorted by (start, -end): an enclosing frame comes first
        by_tid[int(t)] = pos
        stack: list[int] = []
        for i in pos.tolist():
            while stack and e_list[stack[-1]] <= s_list[i]:
                stack.pop()
            p = stack[-1] if stack else NONE
            parent[i] = p
            if is_user[i]:
                user[i] = i
            elif p != NONE:
                user[i], callee[i] = (p, i) if is_user[p] else (user[p], callee[p])
            stack.append(i)
    callee_at = np.array(callee, np.int64)
    # a built-in frame the profiler named after an earlier call (analyses.frame_labels) names no call of the line
    wrong = mislabelled(trace, rows)
    callee_at[(callee_at != NONE) & wrong[np.maximum(callee_at, 0)]] = NONE
    return Stacks(start, end, ev.name[rows], np.array(parent, np.int64), np.array(user, np.int64), callee_at, by_tid)


def innermost(st: Stacks, tid: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The innermost Python frame covering time t on thread tid (a position into st), NONE where none does."""
    out = np.full(len(t), NONE, np.int64)
    for th in distinct(tid):
        pos = st.by_tid.get(int(th))
        if pos is None:
            continue
        m = np.flatnonzero(tid == th)
        k = np.searchsorted(st.start[pos], t[m], side="right") - 1
        cur = np.where(k >= 0, pos[np.maximum(k, 0)], NONE)
        # the last frame to start before t may have returned already: climb to the one that still runs
        while True:
            done = (cur == NONE) | (st.end[np.maximum(cur, 0)] > t[m])
            if done.all():
                break
            cur = np.where(done, cur, st.parent[np.maximum(cur, 0)])
        out[m] = cur
    return out


def user_frames_at(st: Stacks, tid: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the user's own frame, what it called) at each (tid, t): positions into st, NONE where none."""
    cur = innermost(st, tid, t)
    ok = cur != NONE
    c = np.maximum(cur, 0)
    return np.where(ok, st.user[c], NONE), np.where(ok, st.callee[c], NONE)


def user_frames_over(st: Stacks, tid: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The user's frame that held each host stretch [s, e) on tid: the innermost one at its middle that runs
    through at least half of it (a loop's function, not one short call inside the loop), else the innermost."""
    mid = s + (e - s) // 2
    user, callee = user_frames_at(st, tid, mid)
    best, best_callee = user.copy(), callee.copy()
    cur = user.copy()
    for _ in range(64):      # user frames nest a few deep; bounded all the same
        ok = cur != NONE
        if not ok.any():
            break
        c = np.maximum(cur, 0)
        over = np.minimum(st.end[c], e) - np.maximum(st.start[c], s)
        held = ok & (2 * over >= (e - s))
        best = np.where(held, cur, best)
        best_callee = np.where(held & (cur != user), NONE, best_callee)
        cur = np.where(ok & ~held, _user_parent(st, c), NONE)
    return best, best_callee


def _user_parent(st: Stacks, pos: np.ndarray) -> np.ndarray:
    p = st.parent[pos]
    return np.where(p != NONE, st.user[np.maximum(p, 0)], NONE)


def lines(trace: Trace, st: Stacks, frame: np.ndarray, callee: np.ndarray, weight_ns: np.ndarray,
          k: int = 3, counts: np.ndarray | None = None) -> tuple[SourceLine, ...]:
    """The k user frames (with what they called) that hold the most weight, most first. Each event counts once, or
    `counts` of one (an op's calls over its GPU activities: a call that launched a memset and a GEMM is one call)."""
    ok = frame != NONE
    if not ok.any():
        return ()
    fname = st.name[frame[ok]].astype(np.int64)
    cname = _call_keys(trace, np.where(callee[ok] != NONE, st.name[np.maximum(callee[ok], 0)].astype(np.int64), -1))
    keys = np.stack((fname, cname), axis=1)
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.ravel()
    w = np.bincount(inv, weights=weight_ns[ok].astype(np.float64))
    n = np.bincount(inv) if counts is None else np.round(np.bincount(inv, weights=counts[ok])).astype(np.int64)
    out = []
    for i in np.argsort(-w, kind="stable")[:k]:
        file, line, func = parse(trace.names[int(uniq[i][0])])
        call, kind = call_of(trace.names[int(uniq[i][1])]) if uniq[i][1] >= 0 else (None, None)
        out.append(SourceLine(file, line, func, call, kind, int(n[i]), round(float(w[i]) / 1e3, 1)))
    return tuple(out)


def _call_keys(trace: Trace, names: np.ndarray) -> np.ndarray:
    """Each callee frame's name index made one per call as the words say it: torch names each module instance's
    marker apart (`nn.Module: Sequential_0` ... `Sequential_79`), so one line calling 40 experts' Sequentials was 40
    small sites, and the top three by weight were a single call elsewhere (heldout-user15 switch_moe_8k: aten::addmm
    'from the `Sequential(...)` in `forward` (model.py:343)', the vocabulary head's 1 call of 111, where 80 came from
    the experts' forward). The first name index of each (call, kind) stands for all of them; -1 (no callee) stays."""
    out = names.copy()
    ids = distinct(names[names >= 0])
    first: dict[tuple, int] = {}
    canon = {int(i): first.setdefault(call_of(trace.names[int(i)]), int(i)) for i in ids.tolist()}
    if any(k != v for k, v in canon.items()):
        m = names >= 0
        out[m] = np.array([canon[int(i)] for i in names[m].tolist()], np.int64)
    return out


def at_rows(trace: Trace, st: Stacks, rows: np.ndarray, weight_ns: np.ndarray, k: int = 3,
            counts: np.ndarray | None = None) -> tuple[SourceLine, ...]:
    """Where the user's code was when each host row (a launch call, a sync, an op) began."""
    ev = trace.ev
    frame, callee = user_frames_at(st, ev.tid[rows], ev.start[rows])
    return lines(trace, st, frame, callee, weight_ns, k, counts)


def grouped(trace: Trace, st: Stacks, rows: np.ndarray, keys: np.ndarray, weight_ns: np.ndarray, label,
            wanted: set[str], k: int = 3, counts: np.ndarray | None = None) -> dict[str, tuple[SourceLine, ...]]:
    """at_rows for each group of host rows (keys: a hotspot's key per row), for the groups named in wanted."""
    out = {}
    ok = rows != NONE
    for key in distinct(keys[ok]):
        name = label(key)
        if name not in wanted:
            continue
        m = ok & (keys == key)
        found = at_rows(trace, st, rows[m], weight_ns[m], k, None if counts is None else counts[m])
        if found:
            out[name] = found
    return out


# --- the call's own line, from the source file --------------------------------------------------------

def refine(line: SourceLine, text: str | None) -> SourceLine:
    """The line with call_line filled in: within the function that starts at line.line, the first call of
    line.call (a method, a function or a library function by its name); unchanged when not found."""
    if text is None or not line.call:
        return line
    tree = _parse(text)
    fn = _function_at(tree, line.line, line.function) if tree is not None else None
    if fn is None:
        return line
    for node in _walk_own(fn):
        if isinstance(node, ast.Call) and _callee(node.func) == line.call:
            return replace(line, call_line=node.lineno)
    return line


_PARSED: dict[int, ast.AST | None] = {}


def _parse(text: str) -> ast.AST | None:
    key = hash(text)
    if key not in _PARSED:
        try:
            _PARSED[key] = ast.parse(text)
        except (SyntaxError, ValueError):
            _PARSED[key] = None
    return _PARSED[key]


def _function_at(tree: ast.AST, first_line: int, name: str):
    """The function (or the module, for '<module>') whose first line, decorators included, is first_line."""
    if name == "<module>":
        return tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if start == first_line:
                return node
    return None


def _walk_own(fn):
    """The nodes of a function's own body in source order, not those of functions defined inside it."""
    body = fn.body if hasattr(fn, "body") else []
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        kids = [c for c in ast.iter_child_nodes(node)
                if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))]
        stack.extend(reversed(kids))


def _callee(func) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None
