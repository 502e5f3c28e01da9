#!/usr/bin/env python3
"""fresh3: eight before/after workload pairs written the way users write them.

Each pair is a BEFORE with one common inefficiency and an AFTER that changes one line. For every
variant: warm up (compile first where compiled), time RUNS separate runs of N steady-state steps
unprofiled (synchronize + perf_counter), then profile one run with torch.profiler
(CPU+CUDA, record_shapes, schedule wait=1 warmup=2 active=A) and write NAME-before.json.gz /
NAME-after.json.gz. truth.json holds the measured medians, spreads and speedups. That harness is
fresh_harness.py (shared with fresh4.py); this file holds only the workloads.

    python3 capture/fresh3.py --out DIR            # on the GPU
    DEVICE=cpu SMALL=1 python capture/fresh3.py --out /tmp/f3   # plumbing dry run

Imports only torch, torchvision, timm, transformers, numpy, the standard library and fresh_harness.py (beside
it); every model is built from a config with random weights (nothing downloads).
"""


import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from fresh_harness import DEVICE, LOW_PRECISION, SMALL, Runner, Suite, amp, compile_model

SUITE = Suite("fresh3", budget_s=410)  # FRESH3_BUDGET_S, FRESH3_CAP_SCALE override
WORKLOADS = SUITE.workloads
workload = SUITE.workload


# --------------------------------------------------------------------------------------------
# 1. timm ViT trained in full fp32 (TF32 off, the default); fix: bf16 autocast.
@workload(
    "vit_fp32_train",
    needs=("timm",),
    domain="vision",
    mode="training",
    compiled=False,
    description="Training a ViT-S/16 from timm at batch 128 on an H200 and it runs at a fraction of the GPU's "
    "tensor-core rate; everything, matmuls included, is in float32.",
    fix_before="loss = F.cross_entropy(model(x), y)",
    fix_after="with torch.autocast('cuda', dtype=torch.bfloat16): loss = F.cross_entropy(model(x), y)",
    expect="2.5-4x: fp32 GEMMs without TF32 run near the 60 TFLOP/s fp32 rate, bf16 on tensor cores ~10x that; "
    "the layernorm/softmax/GELU and optimizer share keeps it well short of 10x",
    steps=10,
    warmup=5,
    active=3,
    cap_s=40,
)
def build_vit(variant):
    import timm

    if SMALL:
        model = timm.create_model("vit_tiny_patch16_224", img_size=64, num_classes=10)
        batch, size, classes = 4, 64, 10
    else:
        model = timm.create_model("vit_small_patch16_224", num_classes=1000)
        batch, size, classes = 128, 224, 1000
    model.to(DEVICE).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(batch, 3, size, size, device=DEVICE)
    y = torch.randint(0, classes, (batch,), device=DEVICE)

    def step():
        if variant == "before":
            loss = F.cross_entropy(model(x), y)
        else:
            with amp():
                loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return Runner(step)


# --------------------------------------------------------------------------------------------
# 2. HF Llama decoded token by token with a per-token .item() EOS check; fix: check every 32.
@workload(
    "llama_decode_item",
    needs=("transformers",),
    domain="language",
    mode="inference",
    compiled=False,
    description="My hand-written greedy decode loop for a small Llama (batch 1, KV cache) calls "
    "(tok == eos).item() every token to decide whether to stop; I read that .item() syncs the GPU every step.",
    fix_before="if (tok == eos_id).item(): break",
    fix_after="finished |= tok == eos_id\nif t % 32 == 0 and finished.item(): break",
    expect="<5% (no real gain): batch-1 eager HF decode is host-bound (~3-5 ms of Python/dispatch per token "
    "against well under 1 ms of GPU work), so the GPU is idle when .item() waits and the sync costs microseconds",
    steps=64,
    warmup=16,
    active=8,
    cap_s=40,
)
def build_llama(variant):
    from transformers import LlamaConfig, LlamaForCausalLM

    if SMALL:
        cfg = LlamaConfig(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512)
    else:
        cfg = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                          num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=2048)
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).to(DEVICE, LOW_PRECISION).eval()
    eos_id = cfg.vocab_size - 1
    gen = torch.Generator().manual_seed(1)
    st = {"stops": 0}

    @torch.no_grad()
    def prepare():
        prompt = torch.randint(0, cfg.vocab_size - 1, (1, 32), generator=gen).to(DEVICE)
        out = model(input_ids=prompt, use_cache=True)
        st["cache"] = out.past_key_values
        st["tok"] = out.logits[:, -1:].argmax(-1)
        st["t"] = 0
        st["finished"] = torch.zeros((1, 1), dtype=torch.bool, device=DEVICE)

    @torch.no_grad()
    def step():
        out = model(input_ids=st["tok"], past_key_values=st["cache"], use_cache=True)
        st["cache"] = out.past_key_values
        tok = out.logits[:, -1:].argmax(-1)
        st["tok"] = tok
        st["t"] += 1
        if variant == "before":
            if (tok == eos_id).item():  # a real loop would break here
                st["stops"] += 1
        else:
            st["finished"] |= tok == eos_id
            if st["t"] % 32 == 0 and st["finished"].item():
                st["stops"] += 1

    return Runner(step, prepare, extra=lambda: {"eos_hits": st["stops"]})


# --------------------------------------------------------------------------------------------
# 3. Keyword-spotting training whose Dataset computes log-mel spectrograms in a Python frame loop,
#    loaded with num_workers=0; fix: num_workers=8.
class SpeechClips(torch.utils.data.Dataset):
    """1 s synthetic clips; random gain + time shift, then a naive per-frame STFT and log-mel."""

    def __init__(self, n, sr=16000, n_mels=64, win=400, hop=160, n_fft=512):
        self.n, self.sr, self.win, self.hop, self.n_fft = n, sr, win, hop, n_fft
        self.window = np.hanning(win).astype(np.float32)
        freqs = np.linspace(0, sr / 2, n_fft // 2 + 1)
        mel = 2595 * np.log10(1 + freqs / 700)
        centers = np.linspace(mel[0], mel[-1], n_mels + 2)
        fb = np.zeros((n_fft // 2 + 1, n_mels), np.float32)
        for m in range(n_mels):
            lo, c, hi = centers[m], centers[m + 1], centers[m + 2]
            fb[:, m] = np.clip(np.minimum((mel - lo) / (c - lo), (hi - mel) / (hi - c)), 0, None)
        self.melfb = fb

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        t = np.arange(self.sr, dtype=np.float32) / self.sr
        wave = 0.1 * rng.standard_normal(self.sr) + np.sin(2 * np.pi * rng.uniform(100, 1000) * t)
        wave = np.roll(wave * rng.uniform(0.5, 1.5), int(rng.integers(-1600, 1600))).astype(np.float32)
        n_frames = 1 + (len(wave) - self.win) // self.hop
        spec = np.empty((n_frames, self.n_fft // 2 + 1), np.float32)
        for f in range(n_frames):
            frame = wave[f * self.hop: f * self.hop + self.win] * self.window
            spec[f] = np.abs(np.fft.rfft(frame, n=self.n_fft)) ** 2
        logmel = np.log(spec @ self.melfb + 1e-6)
        logmel = (logmel - logmel.mean()) / (logmel.std() + 1e-5)
        return torch.from_numpy(logmel).unsqueeze(0), int(rng.integers(0, 35))


class KWSNet(nn.Module):
    def __init__(self, classes=35):
        super().__init__()
        layers, c_in = [], 1
        for c in (32, 64, 128):
            layers += [nn.Conv2d(c_in, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(), nn.MaxPool2d(2)]
            c_in = c
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(c_in, classes)

    def forward(self, x):
        return self.head(self.features(x).mean((2, 3)))


@workload(
    "audio_loader_workers0",
    needs=(),
    domain="audio",
    mode="training",
    compiled=False,
    description="Training a small keyword-spotting CNN on log-mel spectrograms; the GPU sits mostly idle. "
    "My Dataset computes the spectrogram per clip in numpy and the DataLoader uses the default num_workers=0.",
    fix_before="loader = DataLoader(ds, batch_size=64, shuffle=True, drop_last=True)",
    fix_after="loader = DataLoader(ds, batch_size=64, shuffle=True, drop_last=True, num_workers=8)",
    expect="4-7x: ~1.5 ms of per-clip Python/numpy x 64 clips (~100 ms) per batch in the main process vs a "
    "few ms of GPU work; 8 worker processes split the feature work (16-core host)",
    steps=16,
    warmup=3,
    active=5,
    cap_s=50,
)
def build_audio(variant):
    batch = 4 if SMALL else 64
    workers = 0 if variant == "before" else (2 if SMALL else 8)
    ds = SpeechClips(batch * 120)
    torch.manual_seed(0)
    if variant == "before":
        loader = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, drop_last=True)
    else:
        loader = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, drop_last=True,
                                             num_workers=workers)
    model = KWSNet().to(DEVICE).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    st = {}
    skip = 1 if workers == 0 else 2 * workers + 2  # let the workers' pipeline fill before timing

    def prepare():
        st.pop("it", None)
        st["it"] = iter(loader)
        for _ in range(skip):
            next(st["it"])

    def step():
        x, y = next(st["it"])
        x, y = x.to(DEVICE), y.to(DEVICE)
        with amp():
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def close():
        st.pop("it", None)

    return Runner(step, prepare, close=close, extra=lambda: {"num_workers": workers, "batch": batch})


# --------------------------------------------------------------------------------------------
# 4. BERT-base classifier serving batches padded to 512 tokens; fix: pad to the batch's longest.
@workload(
    "bert_pad_max_length",
    needs=("transformers",),
    domain="language",
    mode="inference",
    compiled=False,
    description="Batch-128 inference with a BERT-base sentiment classifier (bf16) on short reviews (16-128 "
    "tokens); throughput is far below what I expected for BERT-base on an H200. My collate pads every "
    "batch to max_length=512.",
    fix_before="L = max_len  # tokenizer(..., padding='max_length', max_length=512)",
    fix_after="L = max(len(s) for s in seqs)  # tokenizer(..., padding='longest')",
    expect="3.5-5x: the batches' longest sequence is ~127 tokens, so ~4x fewer tokens through every GEMM and "
    "~16x less attention work; host overhead of 12 eager layers caps it below the token ratio",
    steps=10,
    warmup=3,
    active=3,
    cap_s=40,
)
def build_bert(variant):
    from transformers import BertConfig, BertForSequenceClassification

    if SMALL:
        cfg = BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=128, max_position_embeddings=128, num_labels=2)
        batch, lo, hi = 4, 8, 32
    else:
        cfg = BertConfig(num_labels=2)  # bert-base: 12 x 768, max 512 positions
        batch, lo, hi = 128, 16, 128
    torch.manual_seed(0)
    model = BertForSequenceClassification(cfg).to(DEVICE, LOW_PRECISION).eval()
    rng = np.random.default_rng(0)
    batches = [[rng.integers(5, cfg.vocab_size, int(rng.integers(lo, hi + 1))) for _ in range(batch)]
               for _ in range(16)]
    max_len = cfg.max_position_embeddings
    st = {"i": 0, "tokens": []}

    def collate(seqs):
        if variant == "before":
            L = max_len
        else:
            L = max(len(s) for s in seqs)
        ids = np.zeros((len(seqs), L), np.int64)
        mask = np.zeros((len(seqs), L), np.int64)
        for i, s in enumerate(seqs):
            ids[i, : len(s)] = s
            mask[i, : len(s)] = 1
        st["tokens"].append(ids.size)
        return torch.from_numpy(ids).to(DEVICE), torch.from_numpy(mask).to(DEVICE)

    @torch.no_grad()
    def step():
        ids, mask = collate(batches[st["i"] % len(batches)])
        st["i"] += 1
        st["pred"] = model(input_ids=ids, attention_mask=mask).logits.argmax(-1)

    return Runner(step, extra=lambda: {"mean_padded_tokens_per_batch": float(np.mean(st["tokens"]))})


# --------------------------------------------------------------------------------------------
# 5. torchvision ResNet-50 inference fed from pageable CPU tensors; the "fix" adds non_blocking=True
#    without pinning the memory (so the copy stays synchronous).
@workload(
    "resnet_h2d_nonblocking",
    needs=("torchvision",),
    domain="vision",
    mode="inference",
    compiled=False,
    description="ResNet-50 batch-64 inference (bf16 autocast) where each batch arrives as a float32 CPU "
    "tensor; the trace shows a big host-to-device copy every step, so I made the copy non_blocking.",
    fix_before="x = batch.to(device)",
    fix_after="x = batch.to(device, non_blocking=True)",
    expect="<5% (no real gain): the batch is in pageable memory, so the 38 MB copy is still staged "
    "synchronously by the driver and cannot overlap the previous step's kernels; pinning it would be the fix",
    steps=10,
    warmup=5,
    active=4,
    cap_s=40,
)
def build_resnet(variant):
    from torchvision.models import resnet18, resnet50

    if SMALL:
        model, batch, size = resnet18(weights=None), 2, 64
    else:
        model, batch, size = resnet50(weights=None), 64, 224
    model.to(DEVICE).eval()
    torch.manual_seed(0)
    cpu_batches = [torch.randn(batch, 3, size, size) for _ in range(4)]
    st = {"i": 0}

    @torch.no_grad()
    def step():
        b = cpu_batches[st["i"] % len(cpu_batches)]
        st["i"] += 1
        if variant == "before":
            x = b.to(DEVICE)
        else:
            x = b.to(DEVICE, non_blocking=True)
        with amp():
            st["pred"] = model(x).argmax(1)

    return Runner(step)


# --------------------------------------------------------------------------------------------
# 6. Diffusion-style UNet training with a per-parameter Python EMA loop; fix: one _foreach_lerp_.
class ResBlock(nn.Module):
    def __init__(self, c_in, c_out, t_dim):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(8, c_in), nn.Conv2d(c_in, c_out, 3, padding=1)
        self.t = nn.Linear(t_dim, c_out)
        self.n2, self.c2 = nn.GroupNorm(8, c_out), nn.Conv2d(c_out, c_out, 3, padding=1)
        self.skip = nn.Conv2d(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x, temb):
        h = self.c1(F.silu(self.n1(x))) + self.t(temb)[:, :, None, None]
        return self.skip(x) + self.c2(F.silu(self.n2(h)))


class UNet(nn.Module):
    def __init__(self, base=64, mults=(1, 2, 4), t_dim=256):
        super().__init__()
        self.t_dim = t_dim
        self.t_mlp = nn.Sequential(nn.Linear(t_dim, t_dim), nn.SiLU(), nn.Linear(t_dim, t_dim))
        self.inp = nn.Conv2d(3, base, 3, padding=1)
        self.down, self.up, chans, c = nn.ModuleList(), nn.ModuleList(), [], base
        for i, m in enumerate(mults):
            for _ in range(2):
                self.down.append(ResBlock(c, base * m, t_dim))
                c = base * m
                chans.append(c)
            if i < len(mults) - 1:
                self.down.append(nn.Conv2d(c, c, 3, stride=2, padding=1))
        self.mid = nn.ModuleList([ResBlock(c, c, t_dim), ResBlock(c, c, t_dim)])
        for i, m in reversed(list(enumerate(mults))):
            for _ in range(2):
                self.up.append(ResBlock(c + chans.pop(), base * m, t_dim))
                c = base * m
            if i > 0:
                self.up.append(nn.Upsample(scale_factor=2))
        self.out = nn.Sequential(nn.GroupNorm(8, c), nn.SiLU(), nn.Conv2d(c, 3, 3, padding=1))

    def forward(self, x, t):
        half = self.t_dim // 2
        freqs = torch.exp(-torch.arange(half, device=x.device) * (np.log(10000.0) / half))
        temb = self.t_mlp(torch.cat([torch.sin(t[:, None] * freqs), torch.cos(t[:, None] * freqs)], 1))
        h, skips = self.inp(x), []
        for blk in self.down:
            h = blk(h, temb) if isinstance(blk, ResBlock) else blk(h)
            if isinstance(blk, ResBlock):
                skips.append(h)
        for blk in self.mid:
            h = blk(h, temb)
        for blk in self.up:
            h = blk(torch.cat([h, skips.pop()], 1), temb) if isinstance(blk, ResBlock) else blk(h)
        return self.out(h)


@workload(
    "unet_ema_loop",
    needs=(),
    domain="vision (generative)",
    mode="training",
    compiled=False,
    description="Training a small diffusion UNet (64x64, batch 16, bf16 autocast) and after every optimizer "
    "step I update an EMA copy of the weights with a Python loop over the ~200 parameters.",
    fix_before="for pe, p in zip(ema_params, params): pe.mul_(decay).add_(p, alpha=1 - decay)",
    fix_after="torch._foreach_lerp_(ema_params, params, 1 - decay)",
    expect="5-20%: the loop launches ~2 tiny kernels per parameter (~400 launches, a few ms of host time) "
    "on top of a step whose GPU time is of the same order; one foreach call replaces them",
    steps=10,
    warmup=5,
    active=3,
    cap_s=40,
)
def build_unet(variant):
    import copy

    batch, size = (2, 16) if SMALL else (16, 64)
    torch.manual_seed(0)
    model = UNet(base=16 if SMALL else 64).to(DEVICE).train()
    ema = copy.deepcopy(model).eval().requires_grad_(False)
    params = [p for p in model.parameters()]
    ema_params = [p for p in ema.parameters()]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    decay = 0.999
    x0 = torch.randn(batch, 3, size, size, device=DEVICE)

    def step():
        t = torch.rand(batch, device=DEVICE)
        noise = torch.randn_like(x0)
        xt = torch.sqrt(1 - t)[:, None, None, None] * x0 + torch.sqrt(t)[:, None, None, None] * noise
        with amp():
            loss = F.mse_loss(model(xt, t * 1000).float(), noise)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        with torch.no_grad():
            if variant == "before":
                for pe, p in zip(ema_params, params):
                    pe.mul_(decay).add_(p, alpha=1 - decay)
            else:
                torch._foreach_lerp_(ema_params, params, 1 - decay)

    return Runner(step, extra=lambda: {"n_params": len(params)})


# --------------------------------------------------------------------------------------------
# 7. DLRM-style recommender inference at small batch, launch-bound eager; fix: compile with
#    mode="reduce-overhead" (CUDA graphs).
class DLRM(nn.Module):
    def __init__(self, n_tables=8, rows=100_000, dim=64, n_dense=13):
        super().__init__()
        self.emb = nn.ModuleList(nn.Embedding(rows, dim) for _ in range(n_tables))
        self.bot = nn.Sequential(nn.Linear(n_dense, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                                 nn.Linear(128, dim), nn.ReLU())
        n = n_tables + 1
        iu = torch.triu_indices(n, n, offset=1)
        self.register_buffer("pairs", iu[0] * n + iu[1], persistent=False)
        self.top = nn.Sequential(nn.Linear(dim + n * (n - 1) // 2, 256), nn.ReLU(), nn.Linear(256, 128),
                                 nn.ReLU(), nn.Linear(128, 1))

    def forward(self, dense, sparse):
        x = self.bot(dense)
        z = torch.stack([x] + [e(sparse[:, i]) for i, e in enumerate(self.emb)], 1)
        inter = torch.bmm(z, z.transpose(1, 2)).flatten(1)[:, self.pairs]
        return torch.sigmoid(self.top(torch.cat([x, inter], 1))).squeeze(1)


@workload(
    "dlrm_cudagraphs",
    needs=(),
    domain="recommendation",
    mode="inference",
    compiled=True,
    description="Scoring candidates with a DLRM-style model (8 embedding tables + MLPs) at batch 256: "
    "~0.1 ms of GPU work per request but each request takes far longer; the GPU is mostly idle.",
    fix_before="model = DLRM().to(device).eval()",
    fix_after="model = torch.compile(DLRM().to(device).eval(), mode='reduce-overhead')",
    expect="3-6x: ~40 tiny kernels launched one by one from Python (host-bound); compiled and replayed as one "
    "CUDA graph the host cost collapses to a graph launch plus input copies",
    steps=100,
    warmup=30,
    active=10,
    cap_s=70,
)
def build_dlrm(variant):
    batch = 16 if SMALL else 256
    torch.manual_seed(0)
    model = DLRM(rows=1000 if SMALL else 100_000).to(DEVICE).eval()
    if variant == "after":
        model = compile_model(model, mode="reduce-overhead")
    inputs = [(torch.randn(batch, 13, device=DEVICE), torch.randint(0, 1000, (batch, 8), device=DEVICE))
              for _ in range(8)]
    st = {"i": 0, "graphs0": unique_graphs()}

    @torch.no_grad()
    def step():
        dense, sparse = inputs[st["i"] % len(inputs)]
        st["i"] += 1
        scores = model(dense, sparse)
        st["top"] = scores.topk(10).indices  # consume before the next replay

    def close():
        torch._dynamo.reset()

    return Runner(step, close=close, extra=lambda: {"dynamo_graphs_compiled": unique_graphs() - st["graphs0"]})


# --------------------------------------------------------------------------------------------
# 8. A compiled text classifier (dynamic=False) serving requests of ever-new lengths recompiles on
#    every request; fix: dynamic=True.
class TextClassifier(nn.Module):
    def __init__(self, vocab=8000, d=256, heads=4, layers=2, classes=4):
        super().__init__()
        self.heads = heads
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(
            nn.ModuleDict(dict(n1=nn.LayerNorm(d), qkv=nn.Linear(d, 3 * d), proj=nn.Linear(d, d),
                               n2=nn.LayerNorm(d), fc1=nn.Linear(d, 4 * d), fc2=nn.Linear(4 * d, d)))
            for _ in range(layers))
        self.head = nn.Linear(d, classes)

    def forward(self, ids):
        h = self.emb(ids)
        B, L, D = h.shape
        for b in self.blocks:
            q, k, v = b["qkv"](b["n1"](h)).view(B, L, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, L, D)
            h = h + b["proj"](a)
            h = h + b["fc2"](F.gelu(b["fc1"](b["n2"](h))))
        return self.head(h.mean(1))


_NEXT_LEN = [40]


def unique_graphs():
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def fresh_length():
    """A sequence length no earlier request had (requests of every length, as in real traffic)."""
    _NEXT_LEN[0] += 1
    return _NEXT_LEN[0]


@workload(
    "compile_recompile",
    needs=(),
    domain="language",
    mode="inference",
    compiled=True,
    description="I wrapped my text classifier in torch.compile(dynamic=False) to get static-shape kernels; "
    "requests come in at whatever length the text has, and the service is much slower than eager was.",
    fix_before="model = torch.compile(model, dynamic=False)",
    fix_after="model = torch.compile(model, dynamic=True)",
    expect=">20x per request: with dynamic=False every new length is a fresh Dynamo trace + Inductor/Triton "
    "compile (~1 s); dynamic=True compiles one symbolic-length graph (untimed warm-up) that serves every length",
    steps=2,
    warmup=1,
    active=3,
    cap_s=130,
)
def build_compile(variant):
    batch = 4 if SMALL else 32
    torch.manual_seed(0)
    eager = TextClassifier().to(DEVICE).eval()
    model = compile_model(eager, dynamic=(variant == "after"))
    st = {"graphs0": unique_graphs()}

    @torch.no_grad()
    def step():
        ids = torch.randint(0, 8000, (batch, fresh_length()), device=DEVICE)
        st["pred"] = model(ids).argmax(-1)

    def prepare():
        # New run, cold Dynamo cache: the first request compiles (untimed), later ones show the smell.
        torch._dynamo.reset()
        step()

    def extra():
        return {"dynamo_graphs_compiled": unique_graphs() - st["graphs0"], "batch": batch}

    def close():
        torch._dynamo.reset()

    return Runner(step, prepare, extra=extra, close=close)


if __name__ == "__main__":
    SUITE.main()
