#!/usr/bin/env python3
"""fresh4: eight more before/after workload pairs written the way users write them.

Each pair is a BEFORE with one common inefficiency (or, for two pairs, none with a good lever) and an
AFTER that changes one line. For every variant: warm up (compile first where compiled), time RUNS
separate runs of N steady-state steps unprofiled (synchronize + perf_counter), then profile one run
with torch.profiler (CPU+CUDA, record_shapes, schedule wait=1 warmup=2 active=A) and write
NAME-before.json.gz / NAME-after.json.gz. truth.json holds the measured medians, spreads and speedups.
That harness is fresh_harness.py (shared with fresh3.py); this file holds only the workloads.

    python3 fresh4.py --out DIR                        # on the GPU (ends within ~480 s on one H100)
    DEVICE=cpu SMALL=1 python fresh4.py --out /tmp/f4  # plumbing dry run

Imports only torch, torchvision, numpy, the standard library and fresh_harness.py (beside it); every
model is built from code or a config with random weights (nothing downloads).
"""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from fresh_harness import DEVICE, IS_CUDA, LOW_PRECISION, SMALL, Runner, Suite, amp, compile_model

SUITE = Suite("fresh4", budget_s=390)  # FRESH4_BUDGET_S, FRESH4_CAP_SCALE override
WORKLOADS = SUITE.workloads
workload = SUITE.workload


# --------------------------------------------------------------------------------------------
# A nanoGPT-style GPT (as people copy it): the attention is either the classic hand-written
# masked softmax or F.scaled_dot_product_attention.
class CausalSelfAttention(nn.Module):
    def __init__(self, d, heads, block, manual):
        super().__init__()
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.n_head, self.manual = heads, manual
        self.register_buffer("bias", torch.tril(torch.ones(block, block)).view(1, 1, block, block),
                             persistent=False)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.manual:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = att @ v
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, d, heads, block, manual):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads, block, manual)
        self.c_fc, self.c_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, vocab=50304, block=1024, layers=12, heads=12, d=768, manual=False):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(block, d)
        self.h = nn.ModuleList(Block(d, heads, block, manual) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.wte.weight = self.lm_head.weight  # weight tying

    def forward(self, idx, targets):
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for blk in self.h:
            x = blk(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def gpt_cfg():
    if SMALL:
        return dict(vocab=512, block=64, layers=2, heads=2, d=64)
    return dict(vocab=50304, block=1024, layers=12, heads=12, d=768)  # GPT-2 small (124M)


# --------------------------------------------------------------------------------------------
# 1. GPT-2 small training with the hand-written causal attention; fix: SDPA (flash).
@workload(
    "gpt2_manual_attention",
    needs=(),
    domain="language",
    mode="training",
    compiled=False,
    description="Pre-training GPT-2 small (nanoGPT-style code, bf16 autocast, batch 8 x 1024 tokens, fused "
    "AdamW) on one H100; the attention is the classic hand-written masked softmax.",
    fix_before="att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))\n"
    "att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))\natt = F.softmax(att, dim=-1)\ny = att @ v",
    fix_after="y = F.scaled_dot_product_attention(q, k, v, is_causal=True)",
    expect="1.6-2.5x: the manual path materialises 8x12x1024x1024 score tensors (bf16 matmul out, scale, "
    "masked_fill, fp32 softmax, bf16 cast) ~1 GB per layer each way, a memory-bound softmax/mask share comparable "
    "to all the GEMMs; flash attention never writes them",
    steps=8,
    warmup=3,
    active=3,
    cap_s=60,
)
def build_gpt_attn(variant):
    cfg = gpt_cfg()
    batch, T = (2, cfg["block"]) if SMALL else (8, 1024)
    torch.manual_seed(0)
    model = GPT(manual=(variant == "before"), **cfg).to(DEVICE).train()
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=IS_CUDA)
    data = [(d[:, :-1].contiguous(), d[:, 1:].contiguous())
            for d in torch.randint(0, cfg["vocab"], (4, batch, T + 1), device=DEVICE)]
    st = {"i": 0}

    def step():
        x, y = data[st["i"] % len(data)]
        st["i"] += 1
        with amp():
            loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    return Runner(step, extra=lambda: {"batch": batch, "seq": T})


# --------------------------------------------------------------------------------------------
# 2. GPT-2 small training (SDPA already) with a per-parameter for-loop AdamW; fix: fused=True.
@workload(
    "gpt2_adamw_foreach_off",
    needs=(),
    domain="language",
    mode="training",
    compiled=False,
    description="Fine-tuning GPT-2 small (SDPA attention, bf16 autocast, batch 8 x 512 tokens). I turned off "
    "the foreach optimizer after reading about memory spikes, and I zero grads with set_to_none=False as in our "
    "old training script. Steps are slower than I expected.",
    fix_before="opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, foreach=False)",
    fix_after="opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=True)",
    expect="1.3-2x: the single-tensor AdamW loops over 148 parameters with ~8 kernels each (~1200 launches, "
    "10-20 ms of host time) while the GPU idles; fused=True is a handful of multi-tensor kernels. "
    "zero_grad(set_to_none=False) stays in both (a ~0.5 GB memset, <1 ms)",
    steps=8,
    warmup=3,
    active=3,
    cap_s=60,
)
def build_gpt_adamw(variant):
    cfg = gpt_cfg()
    batch, T = (2, cfg["block"]) if SMALL else (8, 512)
    torch.manual_seed(0)
    model = GPT(manual=False, **cfg).to(DEVICE).train()
    if variant == "before":
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, foreach=False)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=True)
    data = [(d[:, :-1].contiguous(), d[:, 1:].contiguous())
            for d in torch.randint(0, cfg["vocab"], (4, batch, T + 1), device=DEVICE)]
    st = {"i": 0}

    def step():
        x, y = data[st["i"] % len(data)]
        st["i"] += 1
        with amp():
            loss = model(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)

    return Runner(step, extra=lambda: {"n_param_tensors": len(list(model.parameters())), "batch": batch, "seq": T})


# --------------------------------------------------------------------------------------------
# 3. Tabular MLP training whose loop normalises features in numpy and logs loss.item() every step;
#    fix: accumulate the loss on the device (no per-step sync), so host prep overlaps the GPU.
@workload(
    "tabular_item_sync",
    needs=(),
    domain="tabular",
    mode="training",
    compiled=False,
    description="Training a 4-layer MLP (4096 wide, bf16 autocast, batch 8192) on tabular data; each step I "
    "log-transform and standardise the batch's 128 numeric features in numpy, copy it pinned/non_blocking, and "
    "add loss.item() to a running total for my progress bar. GPU utilisation hovers around half.",
    fix_before="running_loss += loss.item()",
    fix_after="running_loss += loss.detach()",
    expect="1.3-1.9x: .item() waits for the GPU to finish the step, then the host spends several ms in numpy "
    "while the GPU idles; without it the next batch's numpy work overlaps the current step's kernels, "
    "so the step goes from prep+GPU to max(prep, GPU)",
    steps=12,
    warmup=4,
    active=4,
    cap_s=40,
)
def build_tabular(variant):
    batch, feats, width = (256, 32, 128) if SMALL else (8192, 128, 4096)
    rng = np.random.default_rng(0)
    raw = [rng.lognormal(size=(batch, feats)).astype(np.float32) for _ in range(6)]
    labels = [(rng.random(batch) < 0.3).astype(np.float32) for _ in range(6)]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(feats, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                          nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 1)).to(DEVICE).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    st = {"i": 0, "running": 0.0}

    def to_dev(a):
        t = torch.from_numpy(a)
        return t.pin_memory().to(DEVICE, non_blocking=True) if IS_CUDA else t.to(DEVICE)

    def step():
        i = st["i"] % len(raw)
        st["i"] += 1
        f = np.log1p(raw[i])
        f = (f - f.mean(0)) / (f.std(0) + 1e-6)
        np.clip(f, -5, 5, out=f)
        x, y = to_dev(f), to_dev(labels[i])
        with amp():
            logits = model(x).squeeze(1)
        loss = F.binary_cross_entropy_with_logits(logits.float(), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if variant == "before":
            st["running"] += loss.item()
        else:
            st["running"] += loss.detach()

    return Runner(step, extra=lambda: {"batch": batch, "features": feats})


# --------------------------------------------------------------------------------------------
# 4. torchvision ResNet-50 training in bf16 with the default NCHW layout; fix: channels_last.
@workload(
    "resnet50_channels_last",
    needs=("torchvision",),
    domain="vision",
    mode="training",
    compiled=False,
    description="Training torchvision ResNet-50 at batch 128 (224x224, bf16 autocast, SGD momentum) on an H100; "
    "images/s is well below the published numbers for this GPU.",
    fix_before="model = resnet50(weights=None).to(device)",
    fix_after="model = resnet50(weights=None).to(device, memory_format=torch.channels_last)",
    expect="1.2-1.6x: bf16 tensor-core convolutions in cuDNN want NHWC; in NCHW the step pays layout transposes "
    "around convs and slower conv kernels; BN/ReLU stay memory-bound either way",
    steps=8,
    warmup=4,
    active=3,
    cap_s=50,
)
def build_resnet_cl(variant):
    from torchvision.models import resnet18, resnet50

    if SMALL:
        ctor, batch, size = resnet18, 2, 64
    else:
        ctor, batch, size = resnet50, 128, 224
    torch.manual_seed(0)
    if variant == "before":
        model = ctor(weights=None).to(DEVICE)
    else:
        model = ctor(weights=None).to(DEVICE, memory_format=torch.channels_last)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    x = torch.randn(batch, 3, size, size, device=DEVICE)
    y = torch.randint(0, 1000, (batch,), device=DEVICE)

    def step():
        with amp():
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return Runner(step, extra=lambda: {"batch": batch})


# --------------------------------------------------------------------------------------------
# 5. torchvision R3D-18 video-clip inference with fixed shapes and cudnn.benchmark off (default);
#    fix: cudnn.benchmark = True.
@workload(
    "r3d_cudnn_benchmark",
    needs=("torchvision",),
    domain="video",
    mode="inference",
    compiled=False,
    description="Scoring 16-frame 112x112 clips with torchvision's R3D-18 action classifier at batch 16 "
    "(bf16 autocast, no_grad); every batch has the same shape. A colleague says to turn on cudnn.benchmark.",
    fix_before="torch.backends.cudnn.benchmark = False  # the default",
    fix_after="torch.backends.cudnn.benchmark = True",
    expect="1.0-1.5x, uncertain: the 3D convolutions are GPU-bound; cuDNN's heuristic choice for bf16 3D convs "
    "in NCDHW may be far from the best algorithm, which benchmarking finds once (in the untimed warm-up)",
    steps=10,
    warmup=4,
    active=3,
    cap_s=60,
)
def build_r3d(variant):
    from torchvision.models.video import r3d_18

    batch, frames, size = (1, 4, 32) if SMALL else (16, 16, 112)
    torch.manual_seed(0)
    prev = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = variant == "after"
    model = r3d_18(weights=None).to(DEVICE).eval()
    clips = torch.randn(batch, 3, frames, size, size, device=DEVICE)
    st = {}

    @torch.no_grad()
    def step():
        with amp():
            st["pred"] = model(clips).argmax(1)

    def close():
        torch.backends.cudnn.benchmark = prev

    return Runner(step, close=close, extra=lambda: {"cudnn_benchmark": torch.backends.cudnn.benchmark})


# --------------------------------------------------------------------------------------------
# 6. Llama-style encoder (hand-written RMSNorm in fp32, rotate_half RoPE, SwiGLU) run eagerly for
#    prefill-style scoring; fix: torch.compile the model (fuses the elementwise chains).
class LlamaishLayer(nn.Module):
    def __init__(self, d, heads, ffn):
        super().__init__()
        self.heads = heads
        self.w_in, self.w_post = nn.Parameter(torch.ones(d)), nn.Parameter(torch.ones(d))
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.gate, self.up = nn.Linear(d, ffn, bias=False), nn.Linear(d, ffn, bias=False)
        self.down = nn.Linear(ffn, d, bias=False)

    @staticmethod
    def rmsnorm(x, w, eps=1e-6):
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
        return w * h.to(x.dtype)

    @staticmethod
    def rotate_half(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    def forward(self, x, cos, sin):
        B, T, D = x.shape
        h = self.rmsnorm(x, self.w_in)
        q = self.q(h).view(B, T, self.heads, -1).transpose(1, 2)
        k = self.k(h).view(B, T, self.heads, -1).transpose(1, 2)
        v = self.v(h).view(B, T, self.heads, -1).transpose(1, 2)
        q = q * cos + self.rotate_half(q) * sin
        k = k * cos + self.rotate_half(k) * sin
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, D)
        x = x + self.o(a)
        h = self.rmsnorm(x, self.w_post)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Llamaish(nn.Module):
    def __init__(self, vocab, d, heads, ffn, layers, max_len):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(LlamaishLayer(d, heads, ffn) for _ in range(layers))
        self.w_out = nn.Parameter(torch.ones(d))
        hd = d // heads
        inv = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
        freqs = torch.outer(torch.arange(max_len).float(), inv)
        emb = torch.cat((freqs, freqs), -1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, ids):
        T = ids.shape[1]
        x = self.emb(ids)
        cos, sin = self.cos[:T].to(x.dtype), self.sin[:T].to(x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return LlamaishLayer.rmsnorm(x, self.w_out)[:, -1]


@workload(
    "llama_eager_fuse",
    needs=(),
    domain="language",
    mode="inference",
    compiled=True,
    description="Embedding documents with a small Llama-style model written by hand (8 layers, d=1024, bf16 "
    "weights, fp32 RMSNorm, rotate_half RoPE, SwiGLU, SDPA) at batch 8 x 1024 tokens, run eagerly under no_grad.",
    fix_before="model = Llamaish(...).to(device, torch.bfloat16).eval()",
    fix_after="model = torch.compile(Llamaish(...).to(device, torch.bfloat16).eval())",
    expect="1.3-1.8x: GPU-bound, but a large share of GPU time is memory-bound elementwise chains (fp32 RMSNorm "
    "= ~6 kernels over fp32 copies, RoPE cat/mul/add on q and k, SiLU*up, residual adds) that Inductor fuses into "
    "a few kernels; GEMMs and flash attention are unchanged",
    steps=10,
    warmup=3,
    active=3,
    cap_s=150,
)
def build_llama_fuse(variant):
    if SMALL:
        cfg, batch, T = dict(vocab=1000, d=64, heads=4, ffn=172, layers=2, max_len=64), 2, 64
    else:
        cfg, batch, T = dict(vocab=32000, d=1024, heads=16, ffn=2816, layers=8, max_len=1024), 8, 1024
    torch.manual_seed(0)
    model = Llamaish(**cfg).to(DEVICE, LOW_PRECISION).eval()
    if variant == "after":
        model = compile_model(model)
    ids = [torch.randint(0, cfg["vocab"], (batch, T), device=DEVICE) for _ in range(4)]
    st = {"i": 0}

    @torch.no_grad()
    def step():
        st["emb"] = model(ids[st["i"] % len(ids)])
        st["i"] += 1

    def close():
        torch._dynamo.reset()

    return Runner(step, close=close, extra=lambda: {"batch": batch, "seq": T})


# --------------------------------------------------------------------------------------------
# 7. NO GOOD LEVER: a wide fp32 MLP under bf16 autocast is big-GEMM bound (tensor cores at their
#    roof); the user's change (CUDA graphs via reduce-overhead) cannot help.
@workload(
    "mlp_gemm_roof",
    needs=(),
    domain="recommendation (retrieval tower)",
    mode="inference",
    compiled=True,
    description="Projecting 16384 item embeddings per batch through a 4-layer 8192-wide MLP tower (fp32 "
    "weights, bf16 autocast, no_grad). I read that CUDA graphs make inference faster, so I compiled it with "
    "mode='reduce-overhead'.",
    fix_before="tower = Tower().to(device).eval()",
    fix_after="tower = torch.compile(Tower().to(device).eval(), mode='reduce-overhead')",
    expect="~1.0x (<5%): 4 GEMMs of 16384x8192x8192 (8.8 TFLOP/step) at the bf16 tensor-core roof; launches are "
    "a few dozen per 10+ ms step, so CUDA graphs remove nothing that matters; fused bias+GELU saves <3%",
    steps=10,
    warmup=5,
    active=3,
    cap_s=70,
)
def build_gemm_roof(variant):
    rows, width = (64, 128) if SMALL else (16384, 8192)
    torch.manual_seed(0)
    layers = []
    for i in range(4):
        layers += [nn.Linear(width, width)] + ([nn.GELU()] if i < 3 else [])
    tower = nn.Sequential(*layers).to(DEVICE).eval()
    if variant == "after":
        tower = compile_model(tower, mode="reduce-overhead")
    xs = [torch.randn(rows, width, device=DEVICE) for _ in range(2)]
    st = {"i": 0}

    @torch.no_grad()
    def step():
        with amp():
            out = tower(xs[st["i"] % len(xs)])
        st["i"] += 1
        st["norm"] = out.float().norm(dim=1)  # consume before the next replay

    def close():
        torch._dynamo.reset()

    return Runner(step, close=close, extra=lambda: {"rows": rows, "width": width})


# --------------------------------------------------------------------------------------------
# 8. NO GOOD LEVER: GPU video-frame preprocessing already compiled into one memory-bound kernel at
#    HBM bandwidth; the user's change (max-autotune) cannot help.
@workload(
    "preprocess_compiled_roof",
    needs=(),
    domain="video (preprocessing)",
    mode="inference",
    compiled=True,
    description="Normalising and colour-jittering batches of 256 decoded 720p frames (uint8, already on the "
    "GPU from NVDEC) into bf16 model inputs; the function is torch.compile'd. I hoped max-autotune would make it "
    "faster.",
    fix_before="prep = torch.compile(preprocess)",
    fix_after="prep = torch.compile(preprocess, mode='max-autotune-no-cudagraphs')",
    expect="~1.0x (<5%): one fused pointwise kernel reads 0.7 GB of uint8 and writes 1.4 GB of bf16 per call "
    "(~0.8 ms at ~2.7 TB/s); it is at the HBM roof and host overhead is a few % of the step",
    steps=30,
    warmup=5,
    active=5,
    cap_s=90,
)
def build_preprocess(variant):
    n, h, w = (4, 36, 64) if SMALL else (256, 720, 1280)
    mean = torch.tensor([0.485, 0.456, 0.406], device=DEVICE).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225], device=DEVICE).view(1, 3, 1, 1)

    def preprocess(frames, gain, bias):
        x = frames.float() / 255.0
        x = (x * gain[:, None, None, None] + bias[:, None, None, None]).clamp(0, 1)
        return ((x - mean) / std).to(torch.bfloat16)

    if variant == "before":
        prep = compile_model(preprocess)
    else:
        prep = compile_model(preprocess, mode="max-autotune-no-cudagraphs")
    g = torch.Generator(device=DEVICE).manual_seed(0)
    frames = [torch.randint(0, 256, (n, 3, h, w), dtype=torch.uint8, device=DEVICE, generator=g)
              for _ in range(2)]
    st = {"i": 0}

    @torch.no_grad()
    def step():
        gain = 0.8 + 0.4 * torch.rand(n, device=DEVICE)
        bias = 0.1 * torch.rand(n, device=DEVICE) - 0.05
        st["out"] = prep(frames[st["i"] % len(frames)], gain, bias)
        st["i"] += 1

    def close():
        torch._dynamo.reset()

    return Runner(step, close=close, extra=lambda: {"frames": n, "hw": [h, w]})


if __name__ == "__main__":
    SUITE.main()
