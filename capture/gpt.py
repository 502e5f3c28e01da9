"""A small GPT with a static KV cache, for prefill + decode traces (gpt-fast style).

Random weights: the trace is about time, not text. The KV cache is static
(max_seq slots), so decode has one shape and compiles once. Named ranges:
`prefill` (TTFT) and one `decode_step` per generated token (per-token time).

Per token, decode streams every weight once: at dim 4096, 6 layers, bf16 that is
~3 GB, about 0.7 ms at the H200's ~4.3 TB/s measured copy rate. Eager issues ~35
kernels a layer through Python and the dispatcher (~10 µs each), so eager decode is
launch-bound; compiled, ~10 kernels a layer, it waits on bytes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Literal

import torch
import torch.nn as nn
import torch.nn.functional as F

from tracetriage.capture.ranges import named_range
from tracetriage.capture.workload import DTYPES, DType, ParameterError, Workload


@dataclass
class ModelArgs:
    vocab: int = 32000
    n_layer: int = 6
    n_head: int = 32
    dim: int = 4096
    max_seq: int = 4096
    ffn_hidden: int = 11008
    rope_base: float = 10000.0
    norm_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_head


MODEL_PRESETS = {
    "tiny": ModelArgs(vocab=512, n_layer=2, n_head=4, dim=128, max_seq=256, ffn_hidden=384),
    "small": ModelArgs(vocab=8192, n_layer=4, n_head=16, dim=1024, max_seq=1024, ffn_hidden=2816),
    "1b": ModelArgs(),
}


class RMSNorm(nn.Module):
    """Written out op by op on purpose: eager pays ~6 launches for it, compile fuses them."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return xf.type_as(x) * self.weight


def rope_table(args: ModelArgs, device, dtype=torch.float32) -> torch.Tensor:
    half = args.head_dim // 2
    freqs = 1.0 / (args.rope_base ** (torch.arange(0, half, device=device, dtype=torch.float32) / half))
    angles = torch.outer(torch.arange(args.max_seq, device=device, dtype=torch.float32), freqs)
    return torch.stack([angles.cos(), angles.sin()], dim=-1).to(dtype)  # [max_seq, half, 2]


def apply_rope(x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    # x: [B, T, H, D]; table: [T, D/2, 2]
    xs = x.float().reshape(*x.shape[:-1], -1, 2)
    t = table.view(1, xs.size(1), 1, xs.size(3), 2)
    out = torch.stack([xs[..., 0] * t[..., 0] - xs[..., 1] * t[..., 1],
                       xs[..., 1] * t[..., 0] + xs[..., 0] * t[..., 1]], dim=-1)
    return out.flatten(3).type_as(x)


class KVCache(nn.Module):
    def __init__(self, args: ModelArgs, dtype):
        super().__init__()
        shape = (1, args.n_head, args.max_seq, args.head_dim)  # batch 1
        self.register_buffer("k", torch.zeros(shape, dtype=dtype), persistent=False)
        self.register_buffer("v", torch.zeros(shape, dtype=dtype), persistent=False)

    def update(self, input_pos, k, v):
        # k, v: [1, H, T, D] written at positions input_pos along the sequence dim
        self.k.index_copy_(2, input_pos, k)
        self.v.index_copy_(2, input_pos, v)
        return self.k, self.v


class Block(nn.Module):
    def __init__(self, args: ModelArgs, dtype):
        super().__init__()
        self.args = args
        self.attn_norm = RMSNorm(args.dim, args.norm_eps)
        self.wqkv = nn.Linear(args.dim, 3 * args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.ffn_norm = RMSNorm(args.dim, args.norm_eps)
        self.w1 = nn.Linear(args.dim, args.ffn_hidden, bias=False)
        self.w3 = nn.Linear(args.dim, args.ffn_hidden, bias=False)
        self.w2 = nn.Linear(args.ffn_hidden, args.dim, bias=False)
        self.cache = KVCache(args, dtype)

    def forward(self, x, rope, mask, input_pos):
        b, t, _ = x.shape
        h, d = self.args.n_head, self.args.head_dim
        q, k, v = self.wqkv(self.attn_norm(x)).split(self.args.dim, dim=-1)
        q = apply_rope(q.view(b, t, h, d), rope).transpose(1, 2)
        k = apply_rope(k.view(b, t, h, d), rope).transpose(1, 2)
        v = v.view(b, t, h, d).transpose(1, 2)
        k, v = self.cache.update(input_pos, k, v)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.wo(y.transpose(1, 2).reshape(b, t, self.args.dim))
        n = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(n)) * self.w3(n))


class GPT(nn.Module):
    def __init__(self, args: ModelArgs, dtype):
        super().__init__()
        self.args = args
        self.tok = nn.Embedding(args.vocab, args.dim)
        self.layers = nn.ModuleList(Block(args, dtype) for _ in range(args.n_layer))
        self.norm = RMSNorm(args.dim, args.norm_eps)
        self.out = nn.Linear(args.dim, args.vocab, bias=False)
        self.register_buffer("causal", torch.tril(torch.ones(args.max_seq, args.max_seq, dtype=torch.bool)),
                             persistent=False)

    def setup_rope(self, device):
        self.register_buffer("rope", rope_table(self.args, device), persistent=False)

    def forward(self, idx, input_pos):
        # idx: [1, T] token ids; input_pos: [T] positions (a device tensor: no host sync)
        mask = self.causal[None, None, input_pos]        # [1, 1, T, max_seq]
        rope = self.rope[input_pos]                      # [T, D/2, 2]
        x = self.tok(idx)
        for layer in self.layers:
            x = layer(x, rope, mask, input_pos)
        return self.out(self.norm(x))


@dataclass
class PrefillDecode(Workload):
    kind: ClassVar[str] = "prefill_decode"
    cpu_sizes: ClassVar[dict] = {"model": "tiny", "prompt_len": 32, "decode_steps": 4, "dtype": "float32"}
    model: Literal["tiny", "small", "1b"] = "1b"     # the keys of MODEL_PRESETS
    mode: Literal["eager", "compile", "graphs"] = "eager"   # graphs: compiled with CUDA graphs
    prompt_len: int = 2048
    decode_steps: int = 32
    dtype: DType = "bfloat16"
    steps: int = 2
    warmup: int = 2

    def setup(self) -> None:
        if self.mode not in ("eager", "compile", "graphs"):
            raise ValueError(f"mode must be eager, compile or graphs, not {self.mode!r}")
        args = MODEL_PRESETS[self.model]
        if self.prompt_len + self.decode_steps > args.max_seq:
            raise ParameterError(f"prompt_len + decode_steps ({self.prompt_len} + {self.decode_steps}) exceeds the "
                                 f"{self.model} model's max_seq of {args.max_seq}")
        dt = DTYPES[self.dtype]
        torch.manual_seed(0)
        with torch.device(self.device):
            self.net = GPT(args, dt).to(dt).eval()
            self.net.setup_rope(self.device)
        for p in self.net.parameters():  # random weights, scaled so activations stay finite
            p.requires_grad_(False)
            if p.dim() == 2:
                p.normal_(0.0, 1.0 / math.sqrt(p.shape[1]))
        self.positions = torch.arange(args.max_seq, device=self.device)
        self.prompt = torch.randint(0, args.vocab, (1, self.prompt_len), device=self.device)
        self.pos = torch.zeros(1, dtype=torch.long, device=self.device)   # decode position, updated on device
        decode = self._decode_one
        if self.mode == "compile":
            decode = torch.compile(decode, fullgraph=True, dynamic=False)
        elif self.mode == "graphs":
            decode = torch.compile(decode, mode="reduce-overhead", fullgraph=True, dynamic=False)
        self.decode = decode

    def _decode_one(self, tok, input_pos):
        logits = self.net(tok, input_pos)
        return logits[:, -1].argmax(dim=-1, keepdim=True)

    @torch.inference_mode()
    def step(self):
        with named_range("prefill"):
            logits = self.net(self.prompt, self.positions[: self.prompt_len])
            tok = logits[:, -1].argmax(dim=-1, keepdim=True)   # stays on device: no .item()
        for i in range(self.decode_steps):
            with named_range("decode_step"):
                self.pos.fill_(self.prompt_len + i)            # one tiny kernel, no host sync
                tok = self.decode(tok, self.pos)
                if self.mode == "graphs":
                    tok = tok.clone()                          # graph outputs are overwritten by the next replay
        return tok

    def inputs(self):
        return [self.prompt]

    def summary(self) -> dict:
        args = MODEL_PRESETS[self.model]
        n_params = sum(p.numel() for p in self.net.parameters())
        elem = torch.empty((), dtype=DTYPES[self.dtype]).element_size()
        per_layer_kv = 2 * args.max_seq * args.dim * elem
        return {
            "params": n_params,
            "weight_bytes": n_params * elem,
            "decode_bytes_per_token_min": n_params * elem + args.n_layer * per_layer_kv,
            "prefill_flops": 2.0 * n_params * self.prompt_len,
            "model": {k: getattr(args, k) for k in ("vocab", "n_layer", "n_head", "dim", "max_seq", "ffn_hidden")},
        }
