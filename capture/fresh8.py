#!/usr/bin/env python3
"""fresh8: eight before/after workload pairs written the way users write them (a held-out TEST set).

Each pair: a BEFORE with one common inefficiency (one pair is healthy: no one-line change buys > 5%) and an
AFTER that changes one line. Harness: fresh_harness.py beside this file.

    python3 fresh8.py --out DIR                        # on the GPU (sized for ~320 s on one H100/H200)
    DEVICE=cpu SMALL=1 python fresh8.py --out /tmp/f8  # plumbing dry run

Every model is built from code or a config with random weights (nothing downloads).
"""

import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from fresh_harness import DEVICE, IS_CUDA, LOW_PRECISION, SMALL, Runner, Suite, amp, compile_model

SUITE = Suite("fresh8", budget_s=320)  # FRESH8_BUDGET_S, FRESH8_CAP_SCALE override
WORKLOADS = SUITE.workloads
workload = SUITE.workload


def _train_step(model, opt, loss_fn):
    loss = loss_fn()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


# --------------------------------------------------------------------------------------------
# 1. timm ViT-S/16 fine-tuning, bf16 autocast, gradient clipping with foreach=False (a per-parameter
#    norm and a per-parameter scale in a Python loop); fix: foreach=True.
@workload(
    "vit_clip_grad_per_param",
    needs=("timm",),
    domain="vision",
    mode="training",
    compiled=False,
    description="Fine-tuning a timm ViT-Small/16 (random weights) on 224px images, batch 64, bf16 autocast, "
    "AdamW (default foreach). The gradient clipping call was copied from an old repo that pinned foreach=False "
    "after a bug report.",
    fix_before="torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=False)",
    fix_after="torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)",
    expect="5-20%: ~150 parameters -> ~300 extra tiny kernels and Python per-parameter calls per step on top of "
    "an eager step that is partly launch-bound",
    steps=10, warmup=4, active=3, cap_s=45,
)
def build_vit_clip(variant):
    import timm

    if SMALL:
        model = timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=10, img_size=32,
                                  patch_size=8, depth=2)
        batch, res, ncls = 2, 32, 10
    else:
        model = timm.create_model("vit_small_patch16_224", pretrained=False, num_classes=100)
        batch, res, ncls = 64, 224, 100
    model = model.to(DEVICE).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.05)
    x = torch.randn(batch, 3, res, res, device=DEVICE)
    y = torch.randint(0, ncls, (batch,), device=DEVICE)
    foreach = variant == "after"

    def step():
        with amp():
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=foreach)
        opt.step()
        opt.zero_grad(set_to_none=True)

    return Runner(step, extra=lambda: {"batch": batch, "n_params": len(list(model.parameters())),
                                       "clip_foreach": foreach})


# --------------------------------------------------------------------------------------------
# 2. GCN-style node classification with index_add_ message passing under
#    torch.use_deterministic_algorithms(True); fix: the flag off.
@workload(
    "gcn_deterministic_index_add",
    needs=(),
    domain="graph",
    mode="training",
    compiled=False,
    description="Full-graph training of a 3-layer GCN-style model written with index_select / index_add_ "
    "(200k nodes, 4M edges, hidden 128, fp32). A reproducibility ticket added "
    "torch.use_deterministic_algorithms(True, warn_only=True) at the top of train.py.",
    fix_before="torch.use_deterministic_algorithms(True, warn_only=True)",
    fix_after="torch.use_deterministic_algorithms(False)",
    expect="20-60%: deterministic index_add_ (forward and the index_select backward) goes through a sort-based "
    "index_put_ with accumulate instead of atomics, and uninitialised memory is NaN-filled",
    steps=6, warmup=3, active=2, cap_s=45,
)
def build_gcn(variant):
    n, e, din, h, ncls = (500, 4000, 16, 16, 5) if SMALL else (200_000, 4_000_000, 128, 128, 40)
    g = torch.Generator().manual_seed(0)
    src = torch.randint(0, n, (e,), generator=g).to(DEVICE)
    dst = torch.randint(0, n, (e,), generator=g).to(DEVICE)
    deg = torch.zeros(n, device=DEVICE).index_add_(0, dst, torch.ones(e, device=DEVICE)).clamp_min(1)
    norm = deg.rsqrt()
    w = (norm[src] * norm[dst]).unsqueeze(1)
    x = torch.randn(n, din, device=DEVICE)
    y = torch.randint(0, ncls, (n,), device=DEVICE)

    class GCN(nn.Module):
        def __init__(self):
            super().__init__()
            self.lins = nn.ModuleList([nn.Linear(din, h), nn.Linear(h, h), nn.Linear(h, ncls)])

        def forward(self, x):
            for i, lin in enumerate(self.lins):
                x = lin(x)
                msg = x.index_select(0, src) * w
                x = torch.zeros_like(x).index_add_(0, dst, msg)
                if i < len(self.lins) - 1:
                    x = F.relu(x)
            return x

    model = GCN().to(DEVICE)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    was_det = torch.are_deterministic_algorithms_enabled()
    was_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    if variant == "before":
        warnings.filterwarnings("ignore", message=".*deterministic.*")
        torch.use_deterministic_algorithms(True, warn_only=True)
    else:
        torch.use_deterministic_algorithms(False)

    def step():
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def close():
        torch.use_deterministic_algorithms(was_det, warn_only=was_warn)

    return Runner(step, close=close, extra=lambda: {"nodes": n, "edges": e, "hidden": h,
                                                    "deterministic": torch.are_deterministic_algorithms_enabled()})


# --------------------------------------------------------------------------------------------
# 3. Text-to-image style sampling: a CLIP text encoder is moved to the GPU for the prompt and sent back
#    to the CPU afterwards "to save VRAM" (on an 80 GB card); fix: drop the .to("cpu").
@workload(
    "t2i_text_encoder_offload",
    needs=("transformers",),
    domain="diffusion",
    mode="inference",
    compiled=False,
    description="Prompt -> latents sampling loop: a CLIP-L-sized text encoder (transformers CLIPTextModel from a "
    "config, bf16) encodes 8 prompts, then a small conv denoiser runs 20 steps on 8x4x64x64 latents. After "
    "encoding, the text encoder is moved back to the CPU to leave room for the denoiser, copied from a "
    "low-VRAM notebook; the next request moves it back to the GPU.",
    fix_before='text_encoder.to("cpu")  # free VRAM for the denoiser',
    fix_after="# (line removed: the text encoder stays on the GPU; the next .to(device) is a no-op)",
    expect="50-85%: ~250 MB of weights go host->device and device->host (pageable) every request, synchronous, "
    "while the GPU idles",
    steps=4, warmup=2, active=2, cap_s=45,
)
def build_t2i(variant):
    from transformers import CLIPTextConfig, CLIPTextModel

    if SMALL:
        cfg = CLIPTextConfig(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                             num_attention_heads=4, max_position_embeddings=77)
        batch, lat, ch, nsteps = 2, 16, 32, 3
    else:
        cfg = CLIPTextConfig(vocab_size=49408, hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                             num_attention_heads=12, max_position_embeddings=77)
        batch, lat, ch, nsteps = 8, 64, 256, 20
    text_encoder = CLIPTextModel(cfg).to(LOW_PRECISION).eval().requires_grad_(False)

    class Denoiser(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Conv2d(4, ch, 3, padding=1)
            self.blocks = nn.ModuleList([nn.Sequential(nn.GroupNorm(32, ch), nn.SiLU(), nn.Conv2d(ch, ch, 3, padding=1))
                                         for _ in range(6)])
            self.ctx = nn.Linear(cfg.hidden_size, ch)
            self.out = nn.Conv2d(ch, 4, 3, padding=1)

        def forward(self, z, t, ctx):
            h = self.inp(z) + self.ctx(ctx.mean(1))[:, :, None, None] * (t / 1000.0)
            for b in self.blocks:
                h = h + b(h)
            return self.out(h)

    den = Denoiser().to(DEVICE, LOW_PRECISION).eval()
    ids = torch.randint(0, cfg.vocab_size, (batch, 77))
    offload = variant == "before"
    st = {}

    def step():
        text_encoder.to(DEVICE)
        with torch.inference_mode():
            ctx = text_encoder(input_ids=ids.to(DEVICE)).last_hidden_state
        if offload:
            text_encoder.to("cpu")  # free VRAM for the denoiser
        with torch.inference_mode():
            z = torch.randn(batch, 4, lat, lat, device=DEVICE, dtype=LOW_PRECISION)
            for i in range(nsteps):
                t = torch.full((batch, 1, 1, 1), 1000.0 - i * 1000.0 / nsteps, device=DEVICE, dtype=LOW_PRECISION)
                eps = den(z, t, ctx)
                z = z - 0.05 * eps
            st["z"] = z

    return Runner(step, extra=lambda: {"batch": batch, "latent": lat, "denoise_steps": nsteps,
                                       "text_encoder_mb": round(sum(p.numel() for p in text_encoder.parameters())
                                                                * 2 / 1e6, 1), "offload": offload})


# --------------------------------------------------------------------------------------------
# 4. Small GPT pre-training with a hand-written label-smoothing-ready loss: a materialised fp32 one-hot over
#    a 50k vocabulary; fix: F.cross_entropy.
@workload(
    "gpt_onehot_fp32_loss",
    needs=(),
    domain="language",
    mode="training",
    compiled=False,
    description="Pre-training a 6-layer, d=512 decoder (nn.TransformerEncoderLayer with a causal mask) with a "
    "GPT-2 vocabulary (50257), batch 8 x 512, bf16 autocast, fused AdamW. The loss was written by hand so that "
    "label smoothing could be added later: one_hot(targets).float() * log_softmax(logits.float()).",
    fix_before="loss = -(F.one_hot(y, V).float() * F.log_softmax(logits.float(), -1)).sum(-1).mean()",
    fix_after="loss = F.cross_entropy(logits.view(-1, V), y.view(-1))",
    expect="25-50%: four or five extra 4096x50257 fp32/int64 tensors (0.8-1.6 GB each) written and read in the "
    "forward and backward; the model itself is small",
    steps=6, warmup=3, active=2, cap_s=45,
)
def build_gpt_onehot(variant):
    V, d, L, heads, B, T = (1000, 64, 2, 4, 2, 32) if SMALL else (50257, 512, 6, 8, 8, 512)

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(V, d)
            self.pos = nn.Embedding(T, d)
            layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, activation="gelu", batch_first=True,
                                               norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, L, enable_nested_tensor=False)
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, V, bias=False)

        def forward(self, ids):
            h = self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
            mask = nn.Transformer.generate_square_subsequent_mask(ids.shape[1], device=ids.device)
            h = self.blocks(h, mask=mask, is_causal=True)
            return self.head(self.ln(h))

    model = GPT().to(DEVICE).train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=IS_CUDA)
    data = [torch.randint(0, V, (B, T + 1), device=DEVICE) for _ in range(3)]
    st = {"i": 0}
    onehot = variant == "before"

    def step():
        ids = data[st["i"] % len(data)]
        st["i"] += 1
        x, y = ids[:, :-1], ids[:, 1:]
        with amp():
            logits = model(x)
            if onehot:
                loss = -(F.one_hot(y, V).float() * F.log_softmax(logits.float(), -1)).sum(-1).mean()
            else:
                loss = F.cross_entropy(logits.view(-1, V), y.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return Runner(step, extra=lambda: {"batch": B, "seq": T, "vocab": V, "onehot_loss": onehot})


# --------------------------------------------------------------------------------------------
# 5. PPO-style rollout on GPU-simulated environments; torch.distributions.Categorical with its default
#    argument validation (host syncs on every construction and every log_prob); fix: validate_args=False.
@workload(
    "ppo_categorical_validate_args",
    needs=(),
    domain="reinforcement learning",
    mode="inference (rollout)",
    compiled=True,
    description="Collecting a 64-step rollout from 2048 vectorised environments simulated on the GPU; the policy "
    "MLP is torch.compile'd; actions come from torch.distributions.Categorical(logits=...) and log_prob. "
    "Distribution argument validation is on (the PyTorch default outside python -O).",
    fix_before="dist = Categorical(logits=logits)",
    fix_after="dist = Categorical(logits=logits, validate_args=False)",
    expect="20-50%: validation does .all() checks (host syncs) on the logits at construction and on the action "
    "in log_prob, twice per env step; the step is small and launch-bound, so each sync exposes the full "
    "host launch latency",
    steps=3, warmup=2, active=1, cap_s=90,
)
def build_ppo(variant):
    from torch.distributions import Categorical

    n_env, obs_dim, n_act, T = (64, 16, 6, 8) if SMALL else (2048, 64, 18, 64)

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(obs_dim, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh())
            self.pi = nn.Linear(256, n_act)
            self.v = nn.Linear(256, 1)

        def forward(self, obs):
            h = self.body(obs)
            return self.pi(h), self.v(h).squeeze(-1)

    policy = compile_model(Policy().to(DEVICE).eval())
    trans = torch.randn(n_act, obs_dim, device=DEVICE) * 0.1
    validate = variant == "before"
    st = {}

    def step():
        obs = torch.zeros(n_env, obs_dim, device=DEVICE)
        acts, logps, vals, rews = [], [], [], []
        with torch.no_grad():
            for t in range(T):
                logits, v = policy(obs)
                dist = Categorical(logits=logits, validate_args=validate)
                a = dist.sample()
                logps.append(dist.log_prob(a))
                acts.append(a)
                vals.append(v)
                obs = torch.tanh(obs + trans[a])  # the GPU "environment"
                rews.append(obs[:, 0])
        st["ret"] = torch.stack(rews).sum(0).mean()

    return Runner(step, extra=lambda: {"envs": n_env, "rollout": T, "validate_args": validate})


# --------------------------------------------------------------------------------------------
# 6. DLRM-style CTR training whose embedding tables were declared with max_norm (in-place row renormalisation
#    on every lookup); fix: drop max_norm.
@workload(
    "ctr_embedding_max_norm",
    needs=(),
    domain="recommendation",
    mode="training",
    compiled=False,
    description="Click-through-rate model: 26 categorical features (EmbeddingBag-free, nn.Embedding tables of "
    "1k-200k rows x 64), 13 dense features, an MLP over the concatenation, batch 8192, Adam. The tables were "
    "declared nn.Embedding(n, 64, max_norm=1.0) following a paper's 'embedding norm constraint'.",
    fix_before="self.embs = nn.ModuleList([nn.Embedding(n, 64, max_norm=1.0) for n in cards])",
    fix_after="self.embs = nn.ModuleList([nn.Embedding(n, 64) for n in cards])",
    expect="15-45%: each of the 26 lookups first runs embedding_renorm_ (sort/unique of the batch's ids, "
    "per-row norms, an in-place scale of the table), in the forward, serialising 26 extra small-kernel chains",
    steps=8, warmup=3, active=2, cap_s=40,
)
def build_ctr(variant):
    if SMALL:
        cards, B, dim = [50, 100, 200] * 2, 64, 16
    else:
        cards, B, dim = [200_000, 100_000, 50_000, 10_000] * 6 + [10_000, 1_000], 8192, 64
    max_norm = 1.0 if variant == "before" else None

    class CTR(nn.Module):
        def __init__(self):
            super().__init__()
            self.embs = nn.ModuleList([nn.Embedding(n, dim, max_norm=max_norm) for n in cards])
            self.dense = nn.Sequential(nn.Linear(13, dim), nn.ReLU())
            self.mlp = nn.Sequential(nn.Linear(dim * (len(cards) + 1), 1024), nn.ReLU(), nn.Linear(1024, 512),
                                     nn.ReLU(), nn.Linear(512, 1))

        def forward(self, dense, sparse):
            feats = [self.dense(dense)] + [emb(sparse[:, i]) for i, emb in enumerate(self.embs)]
            return self.mlp(torch.cat(feats, 1)).squeeze(1)

    model = CTR().to(DEVICE)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    card = torch.tensor(cards, device=DEVICE)
    data = [(torch.randn(B, 13, device=DEVICE), (torch.rand(B, len(cards), device=DEVICE) ** 3 * card).long(),
             torch.randint(0, 2, (B,), device=DEVICE).float()) for _ in range(3)]
    st = {"i": 0}

    def step():
        dense, sparse, y = data[st["i"] % len(data)]
        st["i"] += 1
        loss = F.binary_cross_entropy_with_logits(model(dense, sparse), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return Runner(step, extra=lambda: {"batch": B, "tables": len(cards), "rows": sum(cards), "max_norm": max_norm})


# --------------------------------------------------------------------------------------------
# 7. HEALTHY: wav2vec2-base-sized CTC fine-tuning, bf16 autocast, GPU-bound; the candidate "fix" is
#    non_blocking=True on a 1 MB pageable audio copy, which buys nothing.
@workload(
    "wav2vec2_ctc_healthy",
    needs=("transformers",),
    domain="audio",
    mode="training",
    compiled=False,
    description="CTC fine-tuning of a wav2vec2-base-sized model (transformers Wav2Vec2ForCTC from a config, "
    "random weights), batch 16 x 10 s of 16 kHz audio, bf16 autocast, cudnn.benchmark on, AdamW (fused). "
    "The audio batch comes from the CPU each step (a pageable 10 MB copy).",
    fix_before="wave = wave_cpu.to(device)",
    fix_after="wave = wave_cpu.to(device, non_blocking=True)",
    expect="~0% (healthy): the step is dominated by the conv feature extractor and 12 transformer layers on the "
    "GPU; a 10 MB pageable copy is ~1 ms of a ~100+ ms step and non_blocking from pageable memory barely changes it",
    steps=4, warmup=2, active=2, cap_s=50,
)
def build_w2v(variant):
    from transformers import Wav2Vec2Config, Wav2Vec2ForCTC

    if SMALL:
        cfg = Wav2Vec2Config(vocab_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                             intermediate_size=64, conv_dim=(32, 32, 32, 32, 32, 32, 32),
                             num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
                             ctc_zero_infinity=True, pad_token_id=0, do_stable_layer_norm=False)
        B, secs, lab = 2, 1, 10
    else:
        cfg = Wav2Vec2Config(vocab_size=32, ctc_zero_infinity=True, pad_token_id=0, mask_time_prob=0.05,
                             layerdrop=0.0)
        B, secs, lab = 16, 10, 120
    prev_bench = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True  # fixed 10 s crops: already set in our train.py
    model = Wav2Vec2ForCTC(cfg).to(DEVICE).train()
    model.freeze_feature_encoder()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4, fused=IS_CUDA)
    g = torch.Generator().manual_seed(0)
    waves = [torch.randn(B, 16000 * secs, generator=g) for _ in range(3)]
    labels = torch.randint(1, 32, (B, lab), device=DEVICE)
    nb = variant == "after"
    st = {"i": 0}

    def step():
        wave_cpu = waves[st["i"] % len(waves)]
        st["i"] += 1
        wave = wave_cpu.to(DEVICE, non_blocking=nb)
        with amp():
            loss = model(wave, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def close():
        torch.backends.cudnn.benchmark = prev_bench

    return Runner(step, close=close, extra=lambda: {"batch": B, "seconds": secs, "non_blocking": nb})


# --------------------------------------------------------------------------------------------
# 8. 3D U-Net segmentation (medical volumes) with torch.backends.cudnn.deterministic = True left on from a
#    reproducibility run; fix: set it back to False.
@workload(
    "unet3d_cudnn_deterministic",
    needs=(),
    domain="vision (3D segmentation)",
    mode="training",
    compiled=False,
    description="Training a small 3D U-Net on 2 x 1 x 96^3 CT crops, bf16 autocast, channels 32-64-128-256, "
    "Dice+CE loss, AdamW. cudnn.benchmark is on; torch.backends.cudnn.deterministic = True was set in the seed "
    "helper for a paper's reproducibility appendix and never removed.",
    fix_before="torch.backends.cudnn.deterministic = True",
    fix_after="torch.backends.cudnn.deterministic = False",
    expect="5-35%: deterministic cuDNN restricts the 3D convolution backward (weight-gradient and data-gradient) "
    "algorithms to the slower deterministic ones; the forward barely changes",
    steps=6, warmup=4, active=2, cap_s=50,
)
def build_unet3d(variant):
    S, chs, B = (16, (4, 8, 16, 32), 1) if SMALL else (96, (32, 64, 128, 256), 2)

    def block(i, o):
        return nn.Sequential(nn.Conv3d(i, o, 3, padding=1, bias=False), nn.InstanceNorm3d(o, affine=True),
                             nn.LeakyReLU(0.01, inplace=True), nn.Conv3d(o, o, 3, padding=1, bias=False),
                             nn.InstanceNorm3d(o, affine=True), nn.LeakyReLU(0.01, inplace=True))

    class UNet3D(nn.Module):
        def __init__(self):
            super().__init__()
            self.down = nn.ModuleList([block(1 if i == 0 else chs[i - 1], c) for i, c in enumerate(chs)])
            self.up = nn.ModuleList([nn.ConvTranspose3d(chs[i + 1], chs[i], 2, stride=2) for i in range(len(chs) - 1)])
            self.dec = nn.ModuleList([block(2 * chs[i], chs[i]) for i in range(len(chs) - 1)])
            self.head = nn.Conv3d(chs[0], 3, 1)

        def forward(self, x):
            skips = []
            for i, b in enumerate(self.down):
                x = b(x)
                if i < len(self.down) - 1:
                    skips.append(x)
                    x = F.max_pool3d(x, 2)
            for i in reversed(range(len(self.up))):
                x = self.dec[i](torch.cat([self.up[i](x), skips[i]], 1))
            return self.head(x)

    prev = (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.deterministic = variant == "before"
    model = UNet3D().to(DEVICE).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(B, 1, S, S, S, device=DEVICE)
    y = torch.randint(0, 3, (B, S, S, S), device=DEVICE)

    def step():
        with amp():
            logits = model(x)
            ce = F.cross_entropy(logits, y)
            p = logits.float().softmax(1)
            oh = F.one_hot(y, 3).permute(0, 4, 1, 2, 3).float()
            dice = 1 - (2 * (p * oh).sum((2, 3, 4)) + 1) / (p.sum((2, 3, 4)) + oh.sum((2, 3, 4)) + 1)
            loss = ce + dice.mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def close():
        torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = prev

    return Runner(step, close=close, extra=lambda: {"batch": B, "size": S,
                                                    "cudnn_deterministic": torch.backends.cudnn.deterministic})


if __name__ == "__main__":
    SUITE.main()
