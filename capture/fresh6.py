#!/usr/bin/env python3
"""fresh6: eight more before/after workload pairs written the way users write them (a held-out TEST set).

Each pair is a BEFORE with one common inefficiency (or, for one pair, none with a good lever) and an
AFTER that changes one line. For every variant: warm up (compile first where compiled), time RUNS
separate runs of N steady-state steps unprofiled (synchronize + perf_counter), then profile one run
with torch.profiler (CPU+CUDA, record_shapes, schedule wait=1 warmup=2 active=A) and write
NAME-before.json.gz / NAME-after.json.gz. truth.json holds the measured medians, spreads and speedups.
The harness is fresh_harness.py (shared with fresh3/4/5.py, beside this file).

    python3 fresh6.py --out DIR                        # on the GPU (ends within ~320 s on one H100/H200)
    DEVICE=cpu SMALL=1 python fresh6.py --out /tmp/f6  # plumbing dry run

Imports torch, transformers, timm, the standard library and fresh_harness.py; every model is built from
code or a config with random weights (nothing downloads).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from fresh_harness import DEVICE, IS_CUDA, LOW_PRECISION, SMALL, Runner, Suite, amp, compile_model

SUITE = Suite("fresh6", budget_s=320)  # FRESH6_BUDGET_S, FRESH6_CAP_SCALE override
WORKLOADS = SUITE.workloads
workload = SUITE.workload


# --------------------------------------------------------------------------------------------
# 1. timm ViT-B/16 serving: uint8 images are converted to float32 on the CPU and the 4x larger float
#    tensor is copied from pageable memory; fix: copy the uint8 tensor and convert on the GPU.
@workload(
    "vit_float_on_cpu_copy",
    needs=("timm",),
    domain="vision",
    mode="inference",
    compiled=False,
    description="Serving timm vit_base_patch16_224 (random weights, bf16, eval, inference_mode) on batches of 128 "
    "decoded 224x224 RGB images that our JPEG decoder hands over as uint8 CPU tensors. Preprocessing scales to "
    "[0,1] floats on the CPU, copies the batch to the GPU and normalises there. The GPU looks underused.",
    fix_before="x = batch.float().div_(255).to(device)",
    fix_after="x = batch.to(device).float().div_(255)",
    expect="1.5-2.5x: each step the host converts 19M pixels to fp32 (77 MB) and copies them from pageable memory "
    "(a blocking copy that also waits for the previous step's kernels), so the GPU idles through the CPU "
    "conversion + the 77 MB copy; copying the 19 MB uint8 tensor and converting on the GPU cuts the idle 4x+",
    steps=6,
    warmup=3,
    active=2,
    cap_s=40,
)
def build_vit_copy(variant):
    import timm

    if SMALL:
        model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=64)
        batch, size = 2, 64
    else:
        model = timm.create_model("vit_base_patch16_224", pretrained=False)
        batch, size = 128, 224
    torch.manual_seed(0)
    model = model.to(DEVICE, LOW_PRECISION).eval()
    gen = torch.Generator().manual_seed(0)
    batches = [torch.randint(0, 256, (batch, 3, size, size), dtype=torch.uint8, generator=gen) for _ in range(2)]
    mean = torch.tensor([0.485, 0.456, 0.406], device=DEVICE).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225], device=DEVICE).view(1, 3, 1, 1)
    st = {"i": 0}

    def step():
        b = batches[st["i"] % len(batches)]
        st["i"] += 1
        with torch.inference_mode():
            if variant == "before":
                x = b.float().div_(255).to(DEVICE)
            else:
                x = b.to(DEVICE).float().div_(255)
            x = ((x - mean) / std).to(LOW_PRECISION)
            st["preds"] = model(x).argmax(1)

    return Runner(step, extra=lambda: {"batch": batch, "size": size, "cpu_dtype": "uint8",
                                       "copied_dtype": "float32" if variant == "before" else "uint8"})


# --------------------------------------------------------------------------------------------
# 2. DLRM-style CTR model training whose multi-hot features are pooled with a per-sample Python loop;
#    fix: F.embedding_bag over the flat ids + offsets.
class CTRModel(nn.Module):
    def __init__(self, n_dense, n_onehot, n_multi, rows, dim, bag_loop):
        super().__init__()
        self.bottom = nn.Sequential(nn.Linear(n_dense, 256), nn.ReLU(), nn.Linear(256, dim), nn.ReLU())
        self.onehot = nn.ModuleList(nn.Embedding(rows, dim) for _ in range(n_onehot))
        self.multi = nn.ModuleList(nn.Embedding(rows, dim) for _ in range(n_multi))
        n_feat = 1 + n_onehot + n_multi
        self.top = nn.Sequential(nn.Linear(n_feat * dim, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                                 nn.Linear(256, 1))
        self.bag_loop = bag_loop

    def forward(self, dense, onehot_ids, multi):
        feats = [self.bottom(dense)] + [emb(onehot_ids[:, j]) for j, emb in enumerate(self.onehot)]
        for emb, (ids, offsets, starts, ends) in zip(self.multi, multi):
            if self.bag_loop:
                pooled = torch.stack([emb(ids[s:e]).sum(0) for s, e in zip(starts, ends)])
            else:
                pooled = F.embedding_bag(ids, emb.weight, offsets, mode="sum")
            feats.append(pooled)
        return self.top(torch.cat(feats, 1)).squeeze(1)


@workload(
    "ctr_bag_python_loop",
    needs=(),
    domain="recommendation",
    mode="training",
    compiled=False,
    description="Training a DLRM-style click-through model (13 dense features, 8 one-hot categorical features, "
    "2 multi-hot features with 1-40 ids per sample, 64-dim embedding tables of 50k rows, fused AdamW) at batch "
    "128. The collate gives each multi-hot feature as flat ids plus per-sample offsets, and the model pools each "
    "sample's bag with a list comprehension. Training is far slower than the model size suggests.",
    fix_before="pooled = torch.stack([emb(ids[s:e]).sum(0) for s, e in zip(starts, ends)])",
    fix_after="pooled = F.embedding_bag(ids, emb.weight, offsets, mode='sum')",
    expect="10-30x: 256 per-sample embedding lookups + sums forward and as many embedding backwards (each a "
    "sort-based kernel sequence plus a dense 50k x 64 gradient that autograd accumulates) are thousands of tiny "
    "launches per step; embedding_bag is one kernel each way",
    steps=3,
    warmup=2,
    active=1,
    cap_s=45,
)
def build_ctr(variant):
    if SMALL:
        batch, rows, dim, n_onehot = 8, 1000, 16, 2
    else:
        batch, rows, dim, n_onehot = 128, 50000, 64, 8
    n_dense, n_multi = 13, 2
    torch.manual_seed(0)
    model = CTRModel(n_dense, n_onehot, n_multi, rows, dim, bag_loop=(variant == "before")).to(DEVICE).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=IS_CUDA)
    gen = torch.Generator().manual_seed(0)
    data = []
    for _ in range(2):
        multi = []
        for _ in range(n_multi):
            lens = torch.randint(1, 41, (batch,), generator=gen)
            offsets = torch.cat([torch.zeros(1, dtype=torch.long), lens.cumsum(0)[:-1]])
            starts = offsets.tolist()
            ends = (offsets + lens).tolist()
            ids = torch.randint(0, rows, (int(lens.sum()),), generator=gen)
            multi.append((ids.to(DEVICE), offsets.to(DEVICE), starts, ends))
        data.append((torch.randn(batch, n_dense, generator=gen).to(DEVICE),
                     torch.randint(0, rows, (batch, n_onehot), generator=gen).to(DEVICE),
                     multi, torch.randint(0, 2, (batch,), generator=gen).float().to(DEVICE)))
    st = {"i": 0}

    def step():
        dense, onehot_ids, multi, y = data[st["i"] % len(data)]
        st["i"] += 1
        loss = F.binary_cross_entropy_with_logits(model(dense, onehot_ids, multi), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return Runner(step, extra=lambda: {"batch": batch, "multi_hot_features": n_multi, "bag_len": [1, 40],
                                       "rows": rows, "dim": dim})


# --------------------------------------------------------------------------------------------
# 3. DiT-style latent diffusion sampling with classifier-free guidance run as two forward passes
#    (conditional, unconditional) per denoising step; fix: one forward over the concatenated batch.
class DiTBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.norm2 = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.ada = nn.Sequential(nn.SiLU(), nn.Linear(d, 6 * d))

    def forward(self, x, c):
        sh1, sc1, g1, sh2, sc2, g2 = self.ada(c).unsqueeze(1).chunk(6, dim=2)
        B, T, D = x.shape
        h = self.norm1(x) * (1 + sc1) + sh1
        q, k, v = self.qkv(h).view(B, T, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v)
        x = x + g1 * self.proj(a.transpose(1, 2).reshape(B, T, D))
        h = self.norm2(x) * (1 + sc2) + sh2
        return x + g2 * self.fc2(F.gelu(self.fc1(h), approximate="tanh"))


class DiT(nn.Module):
    def __init__(self, size, patch, ch, d, heads, depth, classes):
        super().__init__()
        self.patch, self.ch, self.grid = patch, ch, size // patch
        self.embed = nn.Conv2d(ch, d, patch, stride=patch)
        self.pos = nn.Parameter(torch.randn(1, self.grid ** 2, d) * 0.02)
        self.t_mlp = nn.Sequential(nn.Linear(256, d), nn.SiLU(), nn.Linear(d, d))
        self.y_emb = nn.Embedding(classes + 1, d)  # the last row is the "null" class for guidance
        self.blocks = nn.ModuleList(DiTBlock(d, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.ada = nn.Sequential(nn.SiLU(), nn.Linear(d, 2 * d))
        self.out = nn.Linear(d, patch * patch * ch)

    def t_embed(self, t):
        half = 128
        freqs = torch.exp(-math.log(10000) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
        args = t.float()[:, None] * freqs[None]
        return torch.cat([torch.cos(args), torch.sin(args)], -1).to(self.pos.dtype)

    def forward(self, x, t, y):
        B = x.shape[0]
        h = self.embed(x).flatten(2).transpose(1, 2) + self.pos
        c = self.t_mlp(self.t_embed(t)) + self.y_emb(y)
        for blk in self.blocks:
            h = blk(h, c)
        sh, sc = self.ada(c).unsqueeze(1).chunk(2, dim=2)
        h = self.out(self.norm(h) * (1 + sc) + sh)
        g, p = self.grid, self.patch
        return h.view(B, g, g, p, p, self.ch).permute(0, 5, 1, 3, 2, 4).reshape(B, self.ch, g * p, g * p)


@workload(
    "dit_cfg_two_passes",
    needs=(),
    domain="diffusion (image generation)",
    mode="inference",
    compiled=False,
    description="Class-conditional image generation with a DiT-B/2-sized latent diffusion transformer written in "
    "plain torch (12 blocks, d=768, adaLN, SDPA; bf16 weights, inference_mode), 4 images per request on 32x32x4 "
    "latents, guidance scale 4; one step() is 8 Euler denoising iterations. Classifier-free guidance calls the "
    "model twice per iteration: once with the class labels, once with the null label.",
    fix_before="eps_c = model(x, t, y); eps_u = model(x, t, y_null)",
    fix_after="eps_c, eps_u = model(torch.cat([x, x]), torch.cat([t, t]), torch.cat([y, y_null])).chunk(2)",
    expect="1.4-1.9x: at 4 x 256 tokens each forward is ~250 small eager ops whose host launch time (~2-3 ms) "
    "exceeds their GPU time, so the two passes cost two host walks; one pass over the 8-image batch costs one "
    "walk with kernels twice as large (still mostly hidden under the launch time)",
    steps=4,
    warmup=2,
    active=1,
    cap_s=40,
)
def build_dit(variant):
    if SMALL:
        cfg, batch, iters = dict(size=8, patch=2, ch=4, d=64, heads=4, depth=2, classes=10), 2, 2
    else:
        cfg, batch, iters = dict(size=32, patch=2, ch=4, d=768, heads=12, depth=12, classes=1000), 4, 8
    torch.manual_seed(0)
    model = DiT(**cfg).to(DEVICE, LOW_PRECISION).eval()
    scale = 4.0
    x0 = torch.randn(batch, cfg["ch"], cfg["size"], cfg["size"], device=DEVICE, dtype=LOW_PRECISION)
    y = torch.randint(0, cfg["classes"], (batch,), device=DEVICE)
    y_null = torch.full_like(y, cfg["classes"])
    ts = torch.linspace(999, 0, iters + 1, device=DEVICE)
    st = {}

    @torch.inference_mode()
    def step():
        x = x0
        for i in range(iters):
            t = ts[i].expand(batch)
            if variant == "before":
                eps_c = model(x, t, y)
                eps_u = model(x, t, y_null)
            else:
                eps_c, eps_u = model(torch.cat([x, x]), torch.cat([t, t]), torch.cat([y, y_null])).chunk(2)
            eps = eps_u + scale * (eps_c - eps_u)
            x = x + (ts[i + 1] - ts[i]) / 1000.0 * eps
        st["x"] = x

    return Runner(step, extra=lambda: {"batch": batch, "denoise_iters_per_step": iters, "guidance": scale,
                                       "tokens_per_image": (cfg["size"] // cfg["patch"]) ** 2})


# --------------------------------------------------------------------------------------------
# 4. Fourier Neural Operator (PDE surrogate) training under torch.set_default_dtype(torch.float64);
#    fix: leave the default float32.
class SpectralConv2d(nn.Module):
    def __init__(self, width, modes):
        super().__init__()
        self.modes = modes
        s = 1 / (width * width)
        self.w1 = nn.Parameter(torch.complex(s * torch.rand(width, width, modes, modes),
                                             s * torch.rand(width, width, modes, modes)))
        self.w2 = nn.Parameter(torch.complex(s * torch.rand(width, width, modes, modes),
                                             s * torch.rand(width, width, modes, modes)))

    def forward(self, x):
        B, C, H, W = x.shape
        m = self.modes
        x_ft = torch.fft.rfft2(x)
        out_ft = torch.zeros(B, C, H, W // 2 + 1, dtype=x_ft.dtype, device=x.device)
        out_ft[:, :, :m, :m] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, :m, :m], self.w1)
        out_ft[:, :, -m:, :m] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, -m:, :m], self.w2)
        return torch.fft.irfft2(out_ft, s=(H, W))


class FNO2d(nn.Module):
    def __init__(self, modes, width, layers):
        super().__init__()
        self.lift = nn.Linear(3, width)  # (a(x), x, y)
        self.spectral = nn.ModuleList(SpectralConv2d(width, modes) for _ in range(layers))
        self.pointwise = nn.ModuleList(nn.Conv2d(width, width, 1) for _ in range(layers))
        self.proj = nn.Sequential(nn.Linear(width, 128), nn.GELU(), nn.Linear(128, 1))

    def forward(self, a):
        B, H, W, _ = a.shape
        gx = torch.linspace(0, 1, H, device=a.device, dtype=a.dtype).view(1, H, 1, 1).expand(B, H, W, 1)
        gy = torch.linspace(0, 1, W, device=a.device, dtype=a.dtype).view(1, 1, W, 1).expand(B, H, W, 1)
        h = self.lift(torch.cat([a, gx, gy], -1)).permute(0, 3, 1, 2)
        for i, (sp, pw) in enumerate(zip(self.spectral, self.pointwise)):
            h = sp(h) + pw(h)
            if i < len(self.spectral) - 1:
                h = F.gelu(h)
        return self.proj(h.permute(0, 2, 3, 1))


@workload(
    "fno_default_float64",
    needs=(),
    domain="scientific ML (PDE surrogate)",
    mode="training",
    compiled=False,
    description="Training a 2D Fourier Neural Operator (4 spectral layers, width 64, 16x16 modes, 1x1 conv "
    "bypass, as in the FNO reference code) on 128x128 Darcy-flow fields at batch 32 with Adam. Our PDE code "
    "starts with torch.set_default_dtype(torch.float64) for the solver's accuracy, and the model is built and "
    "trained in the same process.",
    fix_before="torch.set_default_dtype(torch.float64)",
    fix_after="# (line removed: the model and data stay float32)",
    expect="1.6-3x: GPU-bound and memory-bound (rfft2/irfft2 over 32x64x128x128 activations, complex mode "
    "slicing/zero-fill, 1x1 convs, GELU, adds) so float64 moves twice the bytes; cuFFT and cuDNN fp64 paths "
    "are also slower than fp32 (fp32 1x1 convs may use TF32); the einsums over the 16x16 modes are small",
    steps=8,
    warmup=3,
    active=2,
    cap_s=40,
)
def build_fno(variant):
    if SMALL:
        batch, res, width, modes, layers = 2, 32, 8, 4, 2
    else:
        batch, res, width, modes, layers = 32, 128, 64, 16, 4
    prev = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64 if variant == "before" else torch.float32)
    torch.manual_seed(0)
    model = FNO2d(modes, width, layers).to(DEVICE).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = [(torch.rand(batch, res, res, 1, device=DEVICE), torch.randn(batch, res, res, 1, device=DEVICE))
            for _ in range(2)]
    st = {"i": 0}

    def step():
        a, u = data[st["i"] % len(data)]
        st["i"] += 1
        pred = model(a)
        loss = (torch.linalg.vector_norm(pred - u, dim=(1, 2, 3)) / torch.linalg.vector_norm(u, dim=(1, 2, 3))).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def close():
        torch.set_default_dtype(prev)

    return Runner(step, close=close, extra=lambda: {"batch": batch, "res": res, "width": width, "modes": modes,
                                                    "dtype": str(next(model.parameters()).dtype)})


# --------------------------------------------------------------------------------------------
# 5. HF wav2vec2-base CTC fine-tuning with gradient checkpointing left on although memory is plentiful;
#    fix: drop gradient_checkpointing_enable().
@workload(
    "wav2vec2_grad_checkpointing",
    needs=("transformers",),
    domain="audio (speech recognition)",
    mode="training",
    compiled=False,
    description="Fine-tuning a wav2vec2-base-sized CTC model (transformers Wav2Vec2ForCTC from a config, random "
    "weights, frozen conv feature encoder, bf16 autocast, fused AdamW) on 10 s utterances at batch 16. The "
    "script was copied from our large-model recipe, which calls model.gradient_checkpointing_enable(); on an "
    "80 GB GPU this model uses a fraction of the memory.",
    fix_before="model.gradient_checkpointing_enable()",
    fix_after="# (line removed)",
    expect="1.2-1.4x: GPU-bound (8000 frames x 12 transformer layers + the frozen conv front end); with "
    "checkpointing each encoder layer's forward runs twice (once more during backward), about a third more "
    "encoder work; memory is not a constraint",
    steps=5,
    warmup=3,
    active=2,
    cap_s=50,
)
def build_wav2vec2(variant):
    from transformers import Wav2Vec2Config, Wav2Vec2ForCTC

    common = dict(vocab_size=32, pad_token_id=0, ctc_loss_reduction="mean", ctc_zero_infinity=True,
                  mask_time_prob=0.0, layerdrop=0.0)
    if SMALL:
        cfg = Wav2Vec2Config(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                             conv_dim=(32,) * 7, num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
                             **common)
        batch, samples, label_len = 2, 16000, 10
    else:
        cfg = Wav2Vec2Config(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                             intermediate_size=3072, **common)
        batch, samples, label_len = 16, 160000, 100
    torch.manual_seed(0)
    model = Wav2Vec2ForCTC(cfg).to(DEVICE).train()
    model.freeze_feature_encoder()
    if variant == "before":
        model.gradient_checkpointing_enable()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4, fused=IS_CUDA)
    data = [(torch.randn(batch, samples, device=DEVICE),
             torch.randint(1, cfg.vocab_size, (batch, label_len), device=DEVICE)) for _ in range(2)]
    st = {"i": 0}

    def step():
        x, labels = data[st["i"] % len(data)]
        st["i"] += 1
        with amp():
            loss = model(input_values=x, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return Runner(step, extra=lambda: {"batch": batch, "samples": samples,
                                       "gradient_checkpointing": bool(model.is_gradient_checkpointing)})


# --------------------------------------------------------------------------------------------
# 6. A torch.compile'd text encoder with a NaN check after every layer (data-dependent `if`: a graph break
#    and a device sync per layer); fix: delete the check.
class EncoderLayer(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x, mask):
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, D))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class TextEncoder(nn.Module):
    def __init__(self, vocab, d, heads, layers, max_len, nan_check):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
        self.layers = nn.ModuleList(EncoderLayer(d, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.nan_check = nan_check

    def forward(self, ids, pad_mask):
        T = ids.size(1)
        h = self.tok(ids) + self.pos(torch.arange(T, device=ids.device))
        mask = pad_mask[:, None, None, :]
        for i, layer in enumerate(self.layers):
            h = layer(h, mask)
            if self.nan_check:
                if torch.isnan(h).any():
                    raise FloatingPointError(f"NaN after layer {i}")
        h = self.norm(h)
        m = pad_mask.unsqueeze(-1).to(h.dtype)
        return F.normalize((h * m).sum(1) / m.sum(1), dim=-1)


@workload(
    "encoder_nan_check_compiled",
    needs=(),
    domain="language (embedding service)",
    mode="inference",
    compiled=True,
    description="A sentence-embedding service: a 6-layer d=768 pre-LN text encoder written in plain torch (bf16 "
    "weights, SDPA with a padding mask, mean pooling), torch.compile'd, batch 16 x 256 tokens under "
    "inference_mode. After a NaN incident last quarter someone added a check after every layer: "
    "`if torch.isnan(h).any(): raise ...`.",
    fix_before="if torch.isnan(h).any(): raise FloatingPointError(f'NaN after layer {i}')",
    fix_after="# (per-layer check removed; NaNs are checked once on the pooled output, off the hot path)",
    expect="1.2-1.7x: the data-dependent `if` is a graph break inside the layer loop, so Dynamo skips the "
    "forward frame (eager glue) and compiles each layer as its own graph; every check is a blocking "
    "device-to-host read: the GPU drains and idles while the host resumes Python, checks guards and launches the "
    "next layer; without it one fused graph streams ~2 ms of GPU work",
    steps=10,
    warmup=3,
    active=3,
    cap_s=110,
)
def build_encoder(variant):
    if SMALL:
        cfg, batch, T = dict(vocab=500, d=64, heads=4, layers=2, max_len=64), 2, 32
    else:
        cfg, batch, T = dict(vocab=30522, d=768, heads=12, layers=6, max_len=512), 16, 256
    torch.manual_seed(0)
    model = TextEncoder(nan_check=(variant == "before"), **cfg).to(DEVICE, LOW_PRECISION).eval()
    model = compile_model(model)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, cfg["vocab"], (batch, T), generator=gen).to(DEVICE)
    lens = torch.randint(T // 2, T + 1, (batch,), generator=gen)
    pad_mask = (torch.arange(T)[None, :] < lens[:, None]).to(DEVICE)
    st = {}

    @torch.inference_mode()
    def step():
        st["emb"] = model(ids, pad_mask)

    def close():
        torch._dynamo.reset()

    return Runner(step, close=close, extra=lambda: {"batch": batch, "seq": T, "layers": cfg["layers"],
                                                    "nan_check_per_layer": variant == "before"})


# --------------------------------------------------------------------------------------------
# 7. Time-series forecaster training that unrolls an nn.LSTMCell over time in Python; fix: nn.LSTM
#    over the whole sequence (one cuDNN call each way).
class Forecaster(nn.Module):
    def __init__(self, n_in, hidden, unrolled):
        super().__init__()
        self.hidden, self.unrolled = hidden, unrolled
        self.cell = nn.LSTMCell(n_in, hidden)
        self.lstm = nn.LSTM(n_in, hidden, batch_first=True)
        self.lstm.weight_ih_l0, self.lstm.weight_hh_l0 = self.cell.weight_ih, self.cell.weight_hh  # same weights
        self.lstm.bias_ih_l0, self.lstm.bias_hh_l0 = self.cell.bias_ih, self.cell.bias_hh
        self.lstm.flatten_parameters()
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        B, T, _ = x.shape
        if self.unrolled:
            h = c = x.new_zeros(B, self.hidden)
            outs = []
            for t in range(T):
                h, c = self.cell(x[:, t], (h, c))
                outs.append(h)
            out = torch.stack(outs, 1)
        else:
            out, _ = self.lstm(x)
        return self.head(out).squeeze(-1)


@workload(
    "lstm_cell_python_loop",
    needs=(),
    domain="time series (forecasting)",
    mode="training",
    compiled=False,
    description="Training a one-layer LSTM forecaster (32 input features, hidden 512, fp32, fused Adam) on "
    "windows of 128 time steps at batch 256, predicting the next value at every step. The model was ported from "
    "a tutorial that unrolls nn.LSTMCell over time in a Python loop.",
    fix_before="for t in range(T): h, c = self.cell(x[:, t], (h, c)); outs.append(h)",
    fix_after="out, _ = self.lstm(x)  # nn.LSTM(32, 512, batch_first=True): cuDNN over the whole window",
    expect="4-10x: 128 time steps x (2 GEMMs + a fused cell kernel forward, ~5 kernels backward) are ~1000 tiny "
    "launches per step and the host walk (Python loop + autograd) is far longer than the GPU work; cuDNN runs the "
    "recurrence in a couple of persistent kernels",
    steps=6,
    warmup=3,
    active=1,
    cap_s=40,
)
def build_lstm(variant):
    n_in, hidden = (8, 32) if SMALL else (32, 512)
    batch, T = (4, 16) if SMALL else (256, 128)
    torch.manual_seed(0)
    model = Forecaster(n_in, hidden, unrolled=(variant == "before")).to(DEVICE).train()
    model.lstm.flatten_parameters()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=IS_CUDA)
    data = [(torch.randn(batch, T, n_in, device=DEVICE), torch.randn(batch, T, device=DEVICE)) for _ in range(2)]
    st = {"i": 0}

    def step():
        x, y = data[st["i"] % len(data)]
        st["i"] += 1
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return Runner(step, extra=lambda: {"batch": batch, "window": T, "hidden": hidden,
                                       "unrolled": variant == "before"})


# --------------------------------------------------------------------------------------------
# 8. NO GOOD LEVER: a GEMM-bound bf16 GPT training step (~70 ms on an H100) that logs loss.item() every
#    step; the user's change (drop the per-step .item()) removes one sync at the step boundary: <2%.
class GPTBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d, bias=False), nn.Linear(4 * d, d, bias=False)

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, D))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, d, heads, layers, max_len):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
        self.blocks = nn.Sequential(*[GPTBlock(d, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        h = self.tok(ids) + self.pos(torch.arange(ids.size(1), device=ids.device))
        return self.head(self.norm(self.blocks(h)))


@workload(
    "gpt_item_logging_roof",
    needs=(),
    domain="language (pre-training)",
    mode="training",
    compiled=False,
    description="Pre-training a 6-layer d=3072 GPT (24 heads, 4x MLP, ~0.9B parameters with embeddings; SDPA "
    "causal, bf16 autocast, fused AdamW, grad clipping) at batch 4 x 2048 tokens. The loop appends loss.item() "
    "to a list every step for logging; I read that .item() syncs the GPU every step and want to remove it.",
    fix_before="losses.append(loss.item())",
    fix_after="losses.append(loss.detach())",
    expect="~1.0x (<2%): ~38 TFLOP of bf16 GEMMs per step (~70 ms) dominate; the one sync per step only drains "
    "the queue at the step boundary (the next step's first kernels start a few hundred microseconds later); "
    "the fused AdamW pass (~25 GB of traffic) is at the HBM roof and LayerNorm/GELU/residuals are a small share",
    steps=4,
    warmup=2,
    active=1,
    cap_s=45,
)
def build_gpt(variant):
    if SMALL:
        cfg, batch, T = dict(vocab=512, d=64, heads=4, layers=2, max_len=128), 2, 128
    else:
        cfg, batch, T = dict(vocab=32000, d=3072, heads=24, layers=6, max_len=2048), 4, 2048
    torch.manual_seed(0)
    with torch.device(DEVICE):
        model = GPT(**cfg).train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=IS_CUDA)
    data = [(d[:, :-1].contiguous(), d[:, 1:].contiguous())
            for d in torch.randint(0, cfg["vocab"], (2, batch, T + 1), device=DEVICE)]
    st = {"i": 0, "losses": []}

    def step():
        x, y = data[st["i"] % len(data)]
        st["i"] += 1
        with amp():
            logits = model(x)
        loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if variant == "before":
            st["losses"].append(loss.item())
        else:
            st["losses"].append(loss.detach())

    return Runner(step, prepare=lambda: st["losses"].clear(),
                  extra=lambda: {"batch": batch, "seq": T, "params_m": round(sum(p.numel() for p in
                                                                                  model.parameters()) / 1e6, 1)})


if __name__ == "__main__":
    SUITE.main()
