"""The workloads of the six ladder rungs a trace can ground (issue 37), one Case per captured variant.

A Case builds a Run on a device: `window()` is what one profiled (or timed) run executes, `facts` what the
capture knows without the trace (the code each line runs, analytic FLOPs and bytes, launch knobs, and for
views and copies whether the result shares its source's storage). Sizes are an H200's; `small` (any CPU run)
shrinks them to seconds under TRITON_INTERPRET=1. No named range says what a line does: lines and ops are
`line_N` and `op_NN`, so a trace shown before grading gives nothing away.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.nn.functional as F

F32, BF16 = 4, 2   # bytes per element


@dataclass
class Run:
    window: Callable[[], Any]
    facts: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    rung: str
    name: str
    about: str
    build: Callable[[str, bool], Run]
    profile_memory: bool = False   # [memory] events: each allocation's bytes (the byte-ledger and view rungs)


def _sms(device: str) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count if torch.device(device).type == "cuda" \
        else 4


def _repeat(fn: Callable[[], Any], times: int) -> Callable[[], Any]:
    def window():
        out = None
        for _ in range(times):
            out = fn()
        return out
    return window


def _lines(device: str, lines: list[tuple[str, Callable[[dict], Any]]], env: dict) -> Run:
    """Code lines run in order, each in a `line_N` range; each binds its result to env[name] (the part of
    the code before ' = '). Facts: per line its code and, after one run, its result's bytes and whether it
    shares storage with anything bound before it (a view) or owns new storage (a copy)."""
    def window():
        names = dict(env)
        for i, (code, fn) in enumerate(lines, 1):
            with torch.profiler.record_function(f"line_{i}"):
                names[code.split(" = ")[0].strip()] = fn(names)
        return names

    facts: dict[str, Any] = {"lines": []}
    names = dict(env)
    for code, fn in lines:
        before = {_storage(v) for v in names.values() if isinstance(v, torch.Tensor)}
        out = fn(names)
        names[code.split(" = ")[0].strip()] = out
        facts["lines"].append({"code": code, **_tensor_facts(out, before)})
    _sync(device)
    return Run(window, facts)


def _storage(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def _tensor_facts(out: Any, earlier_storages: set[int]) -> dict:
    if not isinstance(out, torch.Tensor):
        return {"type": type(out).__name__}
    view = _storage(out) in earlier_storages
    return {"shape": list(out.shape), "stride": list(out.stride()), "dtype": str(out.dtype).removeprefix("torch."),
            "device": out.device.type, "contiguous": out.is_contiguous(), "view": view,
            "numel_bytes": out.numel() * out.element_size(),
            "new_storage_bytes": 0 if view else out.untyped_storage().nbytes()}


def _sync(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


# --- M03.01 occupancy is not the goal --------------------------------------------------------------------------

def _stream(programs_per_sm: float | None, block: int, warps: int) -> Callable[[str, bool], Run]:
    """y = 2x over 1 GiB of fp32 (256 Mi elements) with a given launch shape; programs_per_sm None: one block
    per BLOCK elements (no grid-stride loop), as torch's own elementwise kernels launch."""
    def build(device: str, small: bool) -> Run:
        from tools.ladder_h200.kernels import stream_scale

        n = (1 << 16) if small else (1 << 28)
        x = torch.randn(n, device=device)
        y = torch.empty_like(x)
        programs = math.ceil(n / block) if programs_per_sm is None else max(1, int(_sms(device) * programs_per_sm))
        times = 5
        run = _repeat(lambda: stream_scale(x, y, programs=programs, block=block, num_warps=warps), times)
        return Run(run, {"kernels_per_window": times, "elements": n, "bytes_per_kernel": 2 * n * F32,
                         "flops_per_kernel": n, "programs": programs, "block": block, "num_warps": warps,
                         "elements_per_thread_per_step": block // (32 * warps)})
    return build


def _tiled_mm(bm: int, bn: int, bk: int, warps: int, stages: int) -> Callable[[str, bool], Run]:
    def build(device: str, small: bool) -> Run:
        from tools.ladder_h200.kernels import matmul

        n = 64 if small else 4096
        dt = torch.float32 if small else torch.bfloat16
        a, b = (torch.randn(n, n, device=device, dtype=dt) / n ** 0.25 for _ in range(2))
        c = torch.empty(n, n, device=device, dtype=dt)
        tile = (min(bm, n), min(bn, n), min(bk, n))
        run = _repeat(lambda: matmul(a, b, c, bm=tile[0], bn=tile[1], bk=tile[2], num_warps=warps,
                                     num_stages=stages), 5)
        return Run(run, _mm_facts(n, n, n, a.element_size(), 5) | {
            "tile": list(tile), "num_warps": warps, "num_stages": stages,
            # each output tile streams its A rows and B columns from L2: the traffic the tiles ask for
            "tile_traffic_bytes": (n * n * n / tile[1] + n * n * n / tile[0]) * a.element_size()})
    return build


def _cublas_mm(device: str, small: bool) -> Run:
    n = 64 if small else 4096
    dt = torch.float32 if small else torch.bfloat16
    a, b = (torch.randn(n, n, device=device, dtype=dt) / n ** 0.25 for _ in range(2))
    return Run(_repeat(lambda: a @ b, 5), _mm_facts(n, n, n, a.element_size(), 5))


def _mm_facts(m: int, n: int, k: int, elem: int, times: int) -> dict:
    return {"kernels_per_window": times, "mnk": [m, n, k], "flops_per_kernel": 2 * m * n * k,
            "bytes_per_kernel": (m * k + k * n + m * n) * elem}


OCCUPANCY = [
    Case("M03.01", "occ-stream-ilp-w4", "grid-stride y=2x, one block of 4 warps per SM, 64 fp32 per thread a step",
         _stream(1, 8192, 4)),
    Case("M03.01", "occ-stream-ilp-w8", "grid-stride y=2x, one block of 8 warps per SM, 64 fp32 per thread a step",
         _stream(1, 16384, 8)),
    Case("M03.01", "occ-stream-full", "y=2x, one block of 4 warps per 1024 elements (a torch-style launch)",
         _stream(None, 1024, 4)),
    Case("M03.01", "occ-stream-starved", "grid-stride y=2x, one block of 2 warps per SM, 4 fp32 per thread a step",
         _stream(1, 256, 2)),
    Case("M03.01", "occ-stream-starved-x16", "the starved kernel with 16 blocks per SM (occupancy raised 16x)",
         _stream(16, 256, 2)),
    Case("M03.01", "occ-mm-bigtile", "Triton matmul 4096^3 bf16, 128x256x64 tiles, 8 warps, 3 stages",
         _tiled_mm(128, 256, 64, 8, 3)),
    Case("M03.01", "occ-mm-smalltile", "Triton matmul 4096^3 bf16, 32x32x32 tiles, 2 warps, 2 stages",
         _tiled_mm(32, 32, 32, 2, 2)),
    Case("M03.01", "occ-mm-cublas", "torch matmul 4096^3 bf16 (cuBLAS)", _cublas_mm),
]


# --- M03.02 coalescing and the transpose tax -------------------------------------------------------------------

def _square(device: str, small: bool, dtype=torch.float32, count: int = 2) -> list[torch.Tensor]:
    n = 64 if small else 8192
    dt = torch.float32 if small else dtype
    return [torch.randn(n, n, device=device, dtype=dt) / n ** 0.25 for _ in range(count)]


def _elementwise(kind: str, reuse: int = 1) -> Callable[[str, bool], Run]:
    """x + y over 8192^2 fp32 (256 MiB each): both contiguous, x read through its .t() view, or x.t() copied
    contiguous first; `reuse` consumers of the same transposed x (one copy serves them all)."""
    def build(device: str, small: bool) -> Run:
        x, y = _square(device, small)

        def through_view():
            out = None
            for _ in range(reuse):
                out = (x if kind == "contig" else x.t()) + y
            return out

        def copy_then_add():
            xt = x.t().contiguous()         # one transposed copy serves every consumer
            out = None
            for _ in range(reuse):
                out = xt + y
            return out
        body = copy_then_add if kind == "copyfirst" else through_view
        code = {"contig": "out = x + y", "tview": "out = x.t() + y",
                "copyfirst": "xt = x.t().contiguous()\nout = xt + y"}[kind]
        nbytes = x.numel() * x.element_size()
        return Run(_repeat(body, 3), {"code": code, "consumers": reuse, "window_repeats": 3,
                                      "tensor_bytes": nbytes, "add_bytes": 3 * nbytes,
                                      "copy_bytes": 2 * nbytes if kind == "copyfirst" else 0,
                                      "out_stride": list(body().stride())})
    return build


def _mm_consumer(kind: str) -> Callable[[str, bool], Run]:
    def build(device: str, small: bool) -> Run:
        a, b = _square(device, small, torch.bfloat16)
        fns = {"contig": lambda: a @ b, "tview": lambda: a @ b.t(), "copyfirst": lambda: a @ b.t().contiguous()}
        code = {"contig": "a @ b", "tview": "a @ b.t()", "copyfirst": "a @ b.t().contiguous()"}
        n = a.shape[0]
        return Run(_repeat(fns[kind], 3), {"code": code[kind], **_mm_facts(n, n, n, a.element_size(), 3),
                                           "copy_bytes": 2 * n * n * a.element_size() if kind == "copyfirst" else 0})
    return build


def _transpose_copy(kind: str) -> Callable[[str, bool], Run]:
    def build(device: str, small: bool) -> Run:
        from tools.ladder_h200.kernels import transpose_naive, transpose_tiled

        (x,) = _square(device, small, count=1)
        fns = {"torch": lambda: x.t().contiguous(), "naive": lambda: transpose_naive(x),
               "tiled": lambda: transpose_tiled(x)}
        out = fns[kind]()
        assert torch.equal(out, x.t()), f"{kind} transpose is wrong"
        nbytes = x.numel() * x.element_size()
        # a strided fp32 read uses 4 bytes of each 32-byte sector it fetches: 8x the bytes, unless L2 keeps the
        # sector until the neighbouring columns' reads arrive
        return Run(_repeat(fns[kind], 3), {"useful_bytes": 2 * nbytes, "strided_read_sector_bytes_max":
                                           nbytes * 8 + nbytes if kind == "naive" else None})
    return build


TRANSPOSE = [
    Case("M03.02", "tr-add-contig", "x + y, both contiguous 8192^2 fp32", _elementwise("contig")),
    Case("M03.02", "tr-add-tview", "x.t() + y: one operand read through the transposed view", _elementwise("tview")),
    Case("M03.02", "tr-add-copyfirst", "x.t().contiguous() + y", _elementwise("copyfirst")),
    Case("M03.02", "tr-reuse8-tview", "8 adds of x.t() + y_i through the view", _elementwise("tview", 8)),
    Case("M03.02", "tr-reuse8-copyfirst", "x.t() copied once, then 8 adds", _elementwise("copyfirst", 8)),
    Case("M03.02", "tr-mm-contig", "a @ b, 8192^3 bf16", _mm_consumer("contig")),
    Case("M03.02", "tr-mm-tview", "a @ b.t() (cuBLAS takes the transpose as a flag)", _mm_consumer("tview")),
    Case("M03.02", "tr-mm-copyfirst", "a @ b.t().contiguous()", _mm_consumer("copyfirst")),
    Case("M03.02", "tr-copy-torch", "x.t().contiguous(), 8192^2 fp32 (torch's copy kernel)", _transpose_copy("torch")),
    Case("M03.02", "tr-copy-naive", "a Triton transpose, one output row per program (strided reads)",
         _transpose_copy("naive")),
    Case("M03.02", "tr-copy-tiled", "a Triton transpose through 64x64 tiles", _transpose_copy("tiled")),
]


# --- M01.02 view or copy ---------------------------------------------------------------------------------------

def _ops(ops: list[tuple[str, Callable[[dict], Any]]], make_env: Callable[[str, bool], dict]):
    """Each op in an `op_NN` range, each run on the same sources; facts: view or copy by storage."""
    def build(device: str, small: bool) -> Run:
        env = make_env(device, small)
        sources = {_storage(v) for v in env.values() if isinstance(v, torch.Tensor)}

        def window():
            out = None
            for i, (_, fn) in enumerate(ops, 1):
                with torch.profiler.record_function(f"op_{i:02d}"):
                    out = fn(env)
            return out
        facts = {"sources": {k: _tensor_facts(v, set()) | {"view": None} for k, v in env.items()
                             if isinstance(v, torch.Tensor)},
                 "ops": [{"range": f"op_{i:02d}", "code": code, **_tensor_facts(fn(env), sources)}
                         for i, (code, fn) in enumerate(ops, 1)]}
        _sync(device)
        return Run(window, facts)
    return build


def _matrix_env(device: str, small: bool) -> dict:
    n = 1024 if small else 4096
    return {"x": torch.randn(n, n, device=device), "v": torch.randn(1, n, device=device),
            "idx": torch.randint(0, n, (n // 4,), device=device)}


def _image_env(device: str, small: bool) -> dict:
    b, c, h, w = (2, 3, 32, 32) if small else (32, 3, 224, 224)
    return {"img": torch.randn(b, c, h, w, device=device), "x": torch.randn(b * 64, 512, device=device)}


VIEW_OPS_MATRIX: list[tuple[str, Callable[[dict], Any]]] = [
    ("x.t()", lambda e: e["x"].t()),
    ("x.view(-1, 1024)", lambda e: e["x"].view(-1, 1024)),
    ("x.t().contiguous()", lambda e: e["x"].t().contiguous()),
    ("x.contiguous()", lambda e: e["x"].contiguous()),
    ("x.t().reshape(-1)", lambda e: e["x"].t().reshape(-1)),
    ("x.reshape(-1)", lambda e: e["x"].reshape(-1)),
    ("x.narrow(0, 0, 512)", lambda e: e["x"].narrow(0, 0, 512)),
    ("x.narrow(0, 0, 512).contiguous()", lambda e: e["x"].narrow(0, 0, 512).contiguous()),
    ("x.narrow(1, 0, 512).contiguous()", lambda e: e["x"].narrow(1, 0, 512).contiguous()),
    ("x[::2]", lambda e: e["x"][::2]),
    ("x[idx]", lambda e: e["x"][e["idx"]]),
    ("v.expand(x.shape[0], -1)", lambda e: e["v"].expand(e["x"].shape[0], -1)),
    ("v.expand(x.shape[0], -1).contiguous()", lambda e: e["v"].expand(e["x"].shape[0], -1).contiguous()),
    ("x.flip(0)", lambda e: e["x"].flip(0)),
    ("x.diagonal()", lambda e: e["x"].diagonal()),
]

VIEW_OPS_IMAGE: list[tuple[str, Callable[[dict], Any]]] = [
    ("img.permute(0, 2, 3, 1)", lambda e: e["img"].permute(0, 2, 3, 1)),
    ("img.permute(0, 2, 3, 1).reshape(img.shape[0], -1, img.shape[1])",
     lambda e: e["img"].permute(0, 2, 3, 1).reshape(e["img"].shape[0], -1, e["img"].shape[1])),
    ("img.permute(0, 2, 3, 1).reshape(img.shape[0], -1)",
     lambda e: e["img"].permute(0, 2, 3, 1).reshape(e["img"].shape[0], -1)),
    ("img.flatten(2)", lambda e: e["img"].flatten(2)),
    ("img[:, :, 8:-8, 8:-8].flatten(2)", lambda e: e["img"][:, :, 8:-8, 8:-8].flatten(2)),
    ("img.unsqueeze(1).squeeze(1)", lambda e: e["img"].unsqueeze(1).squeeze(1)),
    ("img.to(torch.float32)", lambda e: e["img"].to(torch.float32)),
    ("img.to(torch.bfloat16)", lambda e: e["img"].to(torch.bfloat16)),
    ("img.contiguous(memory_format=torch.channels_last)",
     lambda e: e["img"].contiguous(memory_format=torch.channels_last)),
    ("x.chunk(4, dim=1)[0]", lambda e: e["x"].chunk(4, dim=1)[0]),
    ("x.unfold(0, 64, 32)", lambda e: e["x"].unfold(0, 64, 32)),
    ("x.view(torch.int32)", lambda e: e["x"].view(torch.int32)),
    ("torch.cat([x, x])", lambda e: torch.cat([e["x"], e["x"]])),
    ("x.repeat(2, 1)", lambda e: e["x"].repeat(2, 1)),
    ("x.expand(2, -1, -1)", lambda e: e["x"].expand(2, -1, -1)),
    ("x.clone()", lambda e: e["x"].clone()),
    ("x[x > 0]", lambda e: e["x"][e["x"] > 0]),
]

VIEWS = [
    Case("M01.02", "viewcopy-matrix", "15 ops on a 4096^2 fp32 matrix, a 1 x 4096 row and an index",
         _ops(VIEW_OPS_MATRIX, _matrix_env), profile_memory=True),
    Case("M01.02", "viewcopy-image", "17 ops on a 32x3x224x224 fp32 batch and a 2048 x 512 matrix",
         _ops(VIEW_OPS_IMAGE, _image_env), profile_memory=True),
]


# --- M01.01 tensor memory accountant ---------------------------------------------------------------------------

def _image_block(device: str, small: bool) -> Run:
    b, h, w = (2, 16, 16) if small else (64, 224, 224)
    env = {"raw": torch.randint(0, 256, (b, h, w, 3), dtype=torch.uint8),   # decoded JPEGs, on the host
           "mean": torch.tensor([0.485, 0.456, 0.406], device=device).view(3, 1, 1),
           "std": torch.tensor([0.229, 0.224, 0.225], device=device).view(3, 1, 1)}
    return _lines(device, [
        ("x = raw.float()", lambda e: e["raw"].float()),
        ("x = x / 255", lambda e: e["x"] / 255),
        ("x = x.to(device)", lambda e: e["x"].to(device)),
        ("x = x.permute(0, 3, 1, 2)", lambda e: e["x"].permute(0, 3, 1, 2)),
        ("x = (x - mean) / std", lambda e: (e["x"] - e["mean"]) / e["std"]),
        ("x = x.contiguous()", lambda e: e["x"].contiguous()),
    ], env)


def _token_block(device: str, small: bool) -> Run:
    b, seq, vocab, heads, dim = (2, 16, 64, 2, 8) if small else (32, 512, 8192, 8, 512)
    ids = torch.randint(0, vocab, (b, seq), device=device)
    ids[:, -seq // 4:] = 0                                                  # padding
    env = {"ids": ids, "table": torch.randn(vocab, dim, device=device)}
    return _with_params(_lines(device, [
        ("mask = ids != 0", lambda e: e["ids"] != 0),
        ("attn = mask[:, None, None, :].expand(-1, heads, seq, -1)",
         lambda e: e["mask"][:, None, None, :].expand(-1, heads, seq, -1)),
        ("attn = attn.float()", lambda e: e["attn"].float()),
        ("onehot = F.one_hot(ids, vocab)", lambda e: F.one_hot(e["ids"], vocab)),
        ("emb = onehot.float() @ table", lambda e: e["onehot"].float() @ e["table"]),
        ("emb = emb * mask[..., None]", lambda e: e["emb"] * e["mask"][..., None]),
    ], env), vocab=vocab, heads=heads, seq=seq, batch=b, dim=dim)


def _audio_block(device: str, small: bool) -> Run:
    b, samples, n_fft, hop, mels = (2, 4000, 64, 32, 8) if small else (16, 480000, 400, 160, 80)
    env = {"wav": torch.randn(b, samples, device=device), "window": torch.hann_window(n_fft, device=device),
           "fb": torch.rand(n_fft // 2 + 1, mels, device=device)}
    return _with_params(_lines(device, [
        ("frames = wav.unfold(-1, n_fft, hop)", lambda e: e["wav"].unfold(-1, n_fft, hop)),
        ("frames = frames * window", lambda e: e["frames"] * e["window"]),
        ("spec = torch.fft.rfft(frames)", lambda e: torch.fft.rfft(e["frames"])),
        ("power = spec.abs() ** 2", lambda e: e["spec"].abs() ** 2),
        ("mel = power @ fb", lambda e: e["power"] @ e["fb"]),
        ("logmel = (mel + 1e-6).log()", lambda e: (e["mel"] + 1e-6).log()),
        ("out = logmel.transpose(1, 2).contiguous()", lambda e: e["logmel"].transpose(1, 2).contiguous()),
    ], env), n_fft=n_fft, hop=hop, mels=mels, batch=b, samples=samples)


def _with_params(run: Run, **params) -> Run:
    """The block's sizes, which its code names (vocab, n_fft, ...), added to its facts."""
    run.facts["params"] = params
    return run


LEDGERS = [
    Case("M01.01", "ledger-image", "uint8 NHWC images made float and normalised on the host, then moved",
         _image_block, profile_memory=True),
    Case("M01.01", "ledger-tokens", "token ids to a padding mask, an expanded attention mask and a one-hot embedding",
         _token_block, profile_memory=True),
    Case("M01.01", "ledger-audio", "a waveform framed with unfold, windowed, rfft, power, mel, log, transposed",
         _audio_block, profile_memory=True),
]


# --- M01.06 decode intensity -----------------------------------------------------------------------------------

def _decode(dtype: torch.dtype, batch: int) -> Callable[[str, bool], Run]:
    """Eight eager decode steps of capture/gpt.py's GPT (6 layers of 4096, 1.48 B parameters) at a batch,
    its static KV cache of 512 positions widened to the batch; each step streams every weight once."""
    def build(device: str, small: bool) -> Run:
        from tracetriage.capture.gpt import GPT, MODEL_PRESETS, ModelArgs

        args = MODEL_PRESETS["tiny"] if small else ModelArgs(max_seq=512)
        dt = torch.float32 if small else dtype
        torch.manual_seed(0)
        with torch.device(device):
            net = GPT(args, dt).to(dt).eval()
            net.setup_rope(device)
        for p in net.parameters():
            p.requires_grad_(False)
            if p.dim() == 2:
                p.normal_(0.0, 1.0 / math.sqrt(p.shape[1]))
        for layer in net.layers:   # the cache is batch 1 in gpt.py; index_copy_ along dim 2 takes any batch
            shape = (batch, args.n_head, args.max_seq, args.head_dim)
            layer.cache.k = torch.zeros(shape, device=device, dtype=dt)
            layer.cache.v = torch.zeros(shape, device=device, dtype=dt)
        tok = torch.randint(0, args.vocab, (batch, 1), device=device)
        pos = torch.zeros(1, dtype=torch.long, device=device)
        start = args.max_seq // 4
        steps = 8

        @torch.inference_mode()
        def window():
            t = tok
            for i in range(steps):
                pos.fill_(start + i)                       # a device tensor: no host sync
                t = net(t, pos)[:, -1].argmax(dim=-1, keepdim=True)
            return t
        params = sum(p.numel() for p in net.parameters())
        elem = torch.empty((), dtype=dt).element_size()
        linear = sum(p.numel() for n, p in net.named_parameters() if p.dim() == 2 and not n.startswith("tok."))
        return Run(window, {"decode_steps": steps, "batch": batch, "dtype": str(dt).removeprefix("torch."),
                            "params": params, "matmul_params": linear, "bytes_per_param": elem,
                            "weight_bytes": params * elem,
                            # per step: every matmul weight read once, 2 FLOPs per weight per sequence in the batch
                            "matmul_flops_per_step": 2 * linear * batch,
                            "matmul_weight_bytes_per_step": linear * elem,
                            "kv_cache_bytes_per_step": 2 * args.n_layer * batch * args.max_seq * args.dim * elem,
                            "model": {k: getattr(args, k) for k in ("vocab", "n_layer", "n_head", "dim", "max_seq",
                                                                    "ffn_hidden")}})
    return build


DECODE = [
    Case("M01.06", "decode-bf16-b1", "GPT 1.48B eager decode, bf16, batch 1", _decode(torch.bfloat16, 1)),
    Case("M01.06", "decode-fp32-b1", "GPT 1.48B eager decode, fp32, batch 1", _decode(torch.float32, 1)),
    Case("M01.06", "decode-bf16-b64", "GPT 1.48B eager decode, bf16, batch 64", _decode(torch.bfloat16, 64)),
]


# --- M00.02 ridge-point workbook -------------------------------------------------------------------------------

def _six(kernels: list[tuple[str, Callable[[str, bool], tuple[Callable[[], Any], dict]]]]):
    """Six ops, each run 5 times in turn: six kernels to place on each card's roofline."""
    def build(device: str, small: bool) -> Run:
        made = [(code, *make(device, small)) for code, make in kernels]

        def window():
            for _, fn, _ in made:
                for _ in range(5):
                    fn()
        return Run(window, {"repeats": 5, "ops": [{"code": code, **facts} for code, _, facts in made]})
    return build


def _mm(m: int, n: int, k: int, dtype: torch.dtype):
    def make(device: str, small: bool):
        mm, nn, kk = (max(1, m // 64), max(1, n // 64), max(1, k // 64)) if small else (m, n, k)
        dt = torch.float32 if small else dtype
        a = torch.randn(mm, kk, device=device, dtype=dt)
        b = torch.randn(kk, nn, device=device, dtype=dt) / kk ** 0.5
        return (lambda: a @ b), _mm_facts(mm, nn, kk, a.element_size(), 1) | {"dtype": str(dt).removeprefix("torch.")}
    return make


def _pointwise(what: str, numel: int, dtype: torch.dtype = torch.float32):
    def make(device: str, small: bool):
        n = numel // 4096 if small else numel
        dt = torch.float32 if small else dtype
        rows = 8192 if not small else 16
        x = torch.randn(rows, n // rows, device=device, dtype=dt)
        y = torch.randn_like(x)
        e = x.element_size()
        fns = {"add": (lambda: x + y, n, 3 * n * e), "sum": (lambda: x.sum(), n, n * e),
               "softmax": (lambda: torch.softmax(x, -1), 5 * n, 2 * n * e),
               "layer_norm": (lambda: F.layer_norm(x, x.shape[-1:]), 8 * n, 2 * n * e)}
        fn, flops, nbytes = fns[what]
        return fn, {"flops_per_kernel": flops, "bytes_per_kernel": nbytes, "shape": list(x.shape),
                    "dtype": str(dt).removeprefix("torch.")}
    return make


def _conv(device: str, small: bool):
    nb, c, hw = (1, 8, 8) if small else (32, 256, 56)
    dt = torch.float32 if small else torch.bfloat16
    x = torch.randn(nb, c, hw, hw, device=device, dtype=dt).contiguous(memory_format=torch.channels_last)
    w = torch.randn(c, c, 3, 3, device=device, dtype=dt).contiguous(memory_format=torch.channels_last) / (9 * c) ** .5
    e = x.element_size()
    return (lambda: F.conv2d(x, w, padding=1)), {"flops_per_kernel": 2 * nb * c * c * 9 * hw * hw,
                                                 "bytes_per_kernel": (2 * x.numel() + w.numel()) * e,
                                                 "dtype": str(dt).removeprefix("torch.")}


def _attention(device: str, small: bool):
    b, h, s, d = (1, 2, 64, 16) if small else (4, 16, 4096, 128)
    dt = torch.float32 if small else torch.bfloat16
    q, k, v = (torch.randn(b, h, s, d, device=device, dtype=dt) for _ in range(3))
    e = q.element_size()
    return (lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)), {
        "flops_per_kernel": 4 * b * h * s * s * d // 2, "bytes_per_kernel": 4 * b * h * s * d * e,   # causal: half
        "dtype": str(dt).removeprefix("torch.")}


def _fp32_mm(device: str, small: bool):
    torch.backends.cuda.matmul.allow_tf32 = False          # CUDA-core fp32 (torch's default)
    return _mm(2048, 2048, 2048, torch.float32)(device, small)


RIDGE = [
    Case("M00.02", "ridge-six-a", "bf16 matmuls 8192^3, 256x8192x8192, 64x8192x8192, 1x8192x8192; layer_norm and "
         "softmax over 8192^2 bf16", _six([
             ("a @ b  # 8192 x 8192 @ 8192 x 8192, bf16", _mm(8192, 8192, 8192, torch.bfloat16)),
             ("a @ b  # 256 x 8192 @ 8192 x 8192, bf16", _mm(256, 8192, 8192, torch.bfloat16)),
             ("a @ b  # 64 x 8192 @ 8192 x 8192, bf16", _mm(64, 8192, 8192, torch.bfloat16)),
             ("a @ b  # 1 x 8192 @ 8192 x 8192, bf16", _mm(1, 8192, 8192, torch.bfloat16)),
             ("F.layer_norm(x, x.shape[-1:])  # 8192 x 8192, bf16", _pointwise("layer_norm", 1 << 26, torch.bfloat16)),
             ("torch.softmax(x, -1)  # 8192 x 8192, bf16", _pointwise("softmax", 1 << 26, torch.bfloat16)),
         ])),
    Case("M00.02", "ridge-six-b", "bf16 128x8192x8192 matmul, fp32 2048^3 matmul, fp32 add and sum over 64 Mi, a bf16 "
         "3x3 conv, causal bf16 attention", _six([
             ("a @ b  # 128 x 8192 @ 8192 x 8192, bf16", _mm(128, 8192, 8192, torch.bfloat16)),
             ("a @ b  # 2048^3, fp32, TF32 off", _fp32_mm),
             ("x + y  # 64 Mi fp32 each", _pointwise("add", 1 << 26)),
             ("x.sum()  # 64 Mi fp32", _pointwise("sum", 1 << 26)),
             ("F.conv2d(x, w, padding=1)  # 32 x 256 x 56 x 56, 3x3, 256 out, bf16 channels_last", _conv),
             ("F.scaled_dot_product_attention(q, k, v, is_causal=True)  # 4 x 16 x 4096 x 128 bf16", _attention),
         ])),
]

RUNGS: dict[str, list[Case]] = {"M03.01": OCCUPANCY, "M03.02": TRANSPOSE, "M01.02": VIEWS, "M01.01": LEDGERS,
                                "M01.06": DECODE, "M00.02": RIDGE}
