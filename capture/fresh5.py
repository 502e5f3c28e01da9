#!/usr/bin/env python3
"""fresh5: eight more before/after workload pairs written the way users write them.

Each pair is a BEFORE with one common inefficiency (or, for two pairs, none with a good lever) and an
AFTER that changes one line. For every variant: warm up (compile first where compiled), time RUNS
separate runs of N steady-state steps unprofiled (synchronize + perf_counter), then profile one run
with torch.profiler (CPU+CUDA, record_shapes, schedule wait=1 warmup=2 active=A) and write
NAME-before.json.gz / NAME-after.json.gz. truth.json holds the measured medians, spreads and speedups.
The harness is fresh_harness.py (shared with fresh3.py and fresh4.py, beside this file).

    python3 fresh5.py --out DIR                        # on the GPU (ends within ~420 s on one H100/H200)
    DEVICE=cpu SMALL=1 python fresh5.py --out /tmp/f5  # plumbing dry run

Imports torch, transformers, timm, torchvision, the standard library and fresh_harness.py; every model is
built from code or a config with random weights (nothing downloads).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from fresh_harness import DEVICE, IS_CUDA, LOW_PRECISION, SMALL, Runner, Suite, amp, compile_model

SUITE = Suite("fresh5", budget_s=320)  # FRESH5_BUDGET_S, FRESH5_CAP_SCALE override
WORKLOADS = SUITE.workloads
workload = SUITE.workload


# --------------------------------------------------------------------------------------------
# 1. HF Mistral-style model, batched greedy generation with use_cache=False (every new token re-runs
#    the whole prefix); fix: use_cache=True (the default).
@workload(
    "mistral_generate_no_cache",
    needs=("transformers",),
    domain="language",
    mode="inference",
    compiled=False,
    description="Batched greedy generation (8 prompts x 1024 tokens, 20 new tokens each) with a ~0.7B "
    "Mistral-architecture model (transformers MistralForCausalLM from a config, bf16, SDPA). Somebody set "
    "use_cache=False in our generate call while debugging a cache bug and it stayed.",
    fix_before="out = model.generate(ids, attention_mask=mask, max_new_tokens=20, do_sample=False, use_cache=False)",
    fix_after="out = model.generate(ids, attention_mask=mask, max_new_tokens=20, do_sample=False, use_cache=True)",
    expect="2-4x: without the KV cache each of the 20 decode steps is a full 8x~1030-token prefill (~10 TFLOP, "
    "~20 ms GPU-bound GEMMs); with the cache it is one prefill plus 19 one-token steps that are host/launch-bound "
    "(HF eager, ~5-7 ms each) and stream the 1.4 GB of weights",
    steps=2,
    warmup=1,
    active=1,
    cap_s=60,
)
def build_mistral(variant):
    from transformers import MistralConfig, MistralForCausalLM

    if SMALL:
        cfg = MistralConfig(vocab_size=1000, hidden_size=64, intermediate_size=172, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                            bos_token_id=1, eos_token_id=2, pad_token_id=0)
        batch, prompt, new = 2, 32, 4
    else:
        cfg = MistralConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=12,
                            num_attention_heads=16, num_key_value_heads=8, max_position_embeddings=4096,
                            sliding_window=None, bos_token_id=1, eos_token_id=2, pad_token_id=0)
        batch, prompt, new = 8, 1024, 20
    torch.manual_seed(0)
    model = MistralForCausalLM(cfg).to(DEVICE, LOW_PRECISION).eval()
    ids = torch.randint(3, cfg.vocab_size, (batch, prompt), device=DEVICE)
    mask = torch.ones_like(ids)
    use_cache = variant == "after"
    st = {}

    def step():
        st["out"] = model.generate(ids, attention_mask=mask, max_new_tokens=new, min_new_tokens=new,
                                   do_sample=False, use_cache=use_cache, pad_token_id=0)

    return Runner(step, extra=lambda: {"batch": batch, "prompt": prompt, "new_tokens": new,
                                       "out_len": int(st["out"].shape[1]) if "out" in st else None,
                                       "use_cache": use_cache})


# --------------------------------------------------------------------------------------------
# 2. HF T5-base fine-tuning in plain fp32 with TF32 matmuls off (PyTorch's default); fix: allow TF32.
@workload(
    "t5_fp32_tf32_off",
    needs=("transformers",),
    domain="language (seq2seq)",
    mode="training",
    compiled=False,
    description="Fine-tuning T5-base (transformers T5ForConditionalGeneration from a config) for summarisation "
    "in fp32, batch 8 x 512 source / 128 target tokens, AdamW. We keep fp32 because T5 is known to overflow in "
    "fp16. Steps take much longer on the H100 than the TFLOP numbers suggest.",
    fix_before="# (nothing set: torch.backends.cuda.matmul.allow_tf32 stays False)",
    fix_after="torch.set_float32_matmul_precision('high')",
    expect="1.6-2.5x: GPU-bound, dominated by fp32 GEMMs that run on the plain FP32 pipe (~50 TFLOP/s) instead "
    "of TF32 tensor cores; the memory-bound T5 RMSNorm/softmax/dropout share stays the same",
    steps=5,
    warmup=3,
    active=2,
    cap_s=50,
)
def build_t5(variant):
    from transformers import T5Config, T5ForConditionalGeneration

    if SMALL:
        cfg = T5Config(vocab_size=512, d_model=64, d_ff=128, d_kv=16, num_layers=2, num_decoder_layers=2,
                       num_heads=4, decoder_start_token_id=0, pad_token_id=0)
        batch, src, tgt = 2, 32, 8
    else:
        cfg = T5Config(vocab_size=32128, d_model=768, d_ff=3072, d_kv=64, num_layers=12, num_decoder_layers=12,
                       num_heads=12, dropout_rate=0.1, feed_forward_proj="relu", decoder_start_token_id=0,
                       pad_token_id=0)
        batch, src, tgt = 8, 512, 128
    prev = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest" if variant == "before" else "high")
    torch.manual_seed(0)
    model = T5ForConditionalGeneration(cfg).to(DEVICE).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    data = [(torch.randint(1, cfg.vocab_size, (batch, src), device=DEVICE),
             torch.randint(1, cfg.vocab_size, (batch, tgt), device=DEVICE)) for _ in range(3)]
    st = {"i": 0}

    def step():
        x, y = data[st["i"] % len(data)]
        st["i"] += 1
        loss = model(input_ids=x, attention_mask=torch.ones_like(x), labels=y).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def close():
        torch.set_float32_matmul_precision(prev)

    return Runner(step, close=close, extra=lambda: {"batch": batch, "src": src, "tgt": tgt,
                                                    "matmul_precision": torch.get_float32_matmul_precision()})


# --------------------------------------------------------------------------------------------
# 3. timm EfficientNet-B0 batch scoring with the model left in train mode and autograd on;
#    fix: model.eval() + torch.inference_mode().
@workload(
    "effnet_eval_no_grad",
    needs=("timm",),
    domain="vision",
    mode="inference",
    compiled=False,
    description="Scoring product images with timm efficientnet_b0 (created from the registry, random weights) "
    "at batch 256, 224x224, bf16 autocast. The scoring loop was copied from the training script: it never calls "
    "model.eval() and does not disable autograd.",
    fix_before="preds = model(x).argmax(1)",
    fix_after="model.eval()\nwith torch.inference_mode(): preds = model(x).argmax(1)",
    expect="1.15-1.6x: memory-bound depthwise/BN/SiLU network; train-mode BatchNorm computes batch statistics "
    "(extra reduction passes + running-stat updates) and autograd records the graph and keeps every activation "
    "alive (more allocator traffic); eval+inference_mode runs plain inference BN",
    steps=10,
    warmup=3,
    active=3,
    cap_s=35,
)
def build_effnet(variant):
    import timm

    batch, size = (2, 64) if SMALL else (256, 224)
    torch.manual_seed(0)
    model = timm.create_model("efficientnet_b0", pretrained=False, num_classes=1000).to(DEVICE)
    if variant == "after":
        model.eval()
    xs = [torch.randn(batch, 3, size, size, device=DEVICE) for _ in range(2)]
    st = {"i": 0}

    def step():
        x = xs[st["i"] % len(xs)]
        st["i"] += 1
        if variant == "before":
            with amp():
                st["preds"] = model(x).argmax(1)
        else:
            with torch.inference_mode(), amp():
                st["preds"] = model(x).argmax(1)

    return Runner(step, extra=lambda: {"batch": batch, "training_mode": model.training})


# --------------------------------------------------------------------------------------------
# 4. torchvision FCN-ResNet50 segmentation training that calls torch.cuda.empty_cache() every step
#    "to avoid fragmentation"; fix: delete the line.
@workload(
    "fcn_empty_cache",
    needs=("torchvision",),
    domain="vision (segmentation)",
    mode="training",
    compiled=False,
    description="Training torchvision fcn_resnet50 (21 classes, random init) on 512x512 crops at batch 8, bf16 "
    "autocast, SGD. After an OOM months ago someone added torch.cuda.empty_cache() at the end of every step.",
    fix_before="torch.cuda.empty_cache()  # at the end of every training step",
    fix_after="# (line removed)",
    expect="1.05-1.4x: GPU-bound dilated ResNet-50 step; empty_cache returns the cached activation blocks, so "
    "every step re-does hundreds of cudaMalloc (and empty_cache's cudaFree synchronises the device), stalling "
    "the host at the step boundary while the GPU idles",
    steps=6,
    warmup=3,
    active=2,
    cap_s=45,
)
def build_fcn(variant):
    from torchvision.models.segmentation import fcn_resnet50

    batch, size = (2, 32) if SMALL else (8, 512)
    torch.manual_seed(0)
    model = fcn_resnet50(weights=None, weights_backbone=None, num_classes=21, aux_loss=False).to(DEVICE).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    x = torch.randn(batch, 3, size, size, device=DEVICE)
    y = torch.randint(0, 21, (batch, size, size), device=DEVICE)

    def step():
        with amp():
            out = model(x)["out"]
        loss = F.cross_entropy(out.float(), y, ignore_index=255)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if variant == "before" and IS_CUDA:
            torch.cuda.empty_cache()

    return Runner(step, extra=lambda: {"batch": batch, "size": size})


# --------------------------------------------------------------------------------------------
# 5. torchvision Faster R-CNN inference called once per image in a Python loop; fix: pass the list.
@workload(
    "fasterrcnn_per_image",
    needs=("torchvision",),
    domain="vision (detection)",
    mode="inference",
    compiled=False,
    description="Running torchvision fasterrcnn_resnet50_fpn (random init, fp32, eval, no_grad) over batches "
    "of 8 decoded 720p frames already on the GPU; the loop calls the model on one image at a time.",
    fix_before="dets = [model([img])[0] for img in frames]",
    fix_after="dets = model(frames)",
    expect="1.5-3x: one image per call leaves the GPU mostly idle: the detector's host side (transform, anchor "
    "generation, RPN top-k/NMS, RoI heads, postprocess with several syncs) costs more than the ~5-8 ms of "
    "convolutions per image; batching amortises the host work over 8 images and gives larger kernels",
    steps=4,
    warmup=2,
    active=1,
    cap_s=50,
)
def build_fasterrcnn(variant):
    from torchvision.models.detection import fasterrcnn_resnet50_fpn

    n, h, w = (2, 96, 128) if SMALL else (8, 720, 1280)
    kw = dict(min_size=96, max_size=128, rpn_pre_nms_top_n_test=200, rpn_post_nms_top_n_test=100) if SMALL else {}
    torch.manual_seed(0)
    model = fasterrcnn_resnet50_fpn(weights=None, weights_backbone=None, **kw).to(DEVICE).eval()
    frames = [torch.rand(3, h, w, device=DEVICE) for _ in range(n)]
    st = {}

    @torch.no_grad()
    def step():
        if variant == "before":
            st["dets"] = [model([img])[0] for img in frames]
        else:
            st["dets"] = model(frames)

    return Runner(step, extra=lambda: {"images": n, "hw": [h, w],
                                       "boxes": [int(d["boxes"].shape[0]) for d in st.get("dets", [])]})


# --------------------------------------------------------------------------------------------
# 6. A plain-torch causal LM (nn.TransformerEncoder) that builds its causal mask on the CPU each forward
#    and copies it over; fix: build it on the device.
class CausalLM(nn.Module):
    def __init__(self, vocab, d, heads, ff, layers, max_len, mask_on_device):
        super().__init__()
        self.emb, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.1, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.mask_on_device = mask_on_device

    def forward(self, ids):
        T = ids.size(1)
        if self.mask_on_device:
            mask = nn.Transformer.generate_square_subsequent_mask(T, device=ids.device)
        else:
            mask = nn.Transformer.generate_square_subsequent_mask(T).to(ids.device)
        pos = torch.arange(T, device=ids.device)
        h = self.enc(self.emb(ids) + self.pos(pos), mask=mask, is_causal=True)
        return self.head(self.norm(h))


@workload(
    "transformer_cpu_mask",
    needs=(),
    domain="language",
    mode="training",
    compiled=False,
    description="Training a 8-layer causal LM built from nn.TransformerEncoder (d=1024, 16 heads, batch 4 x "
    "4096 tokens, bf16 autocast, fused AdamW). The forward builds the causal mask with "
    "nn.Transformer.generate_square_subsequent_mask(T).to(ids.device), as in the PyTorch tutorial.",
    fix_before="mask = nn.Transformer.generate_square_subsequent_mask(T).to(ids.device)",
    fix_after="mask = nn.Transformer.generate_square_subsequent_mask(T, device=ids.device)",
    expect="1.1-1.35x: each step the host fills and triu's a 4096x4096 fp32 mask (64 MB) on the CPU and copies it "
    "from pageable memory; the copy waits for the previous step's GPU work (an implicit sync) and the GPU then "
    "idles through the mask build + 64 MB copy; on the device it is two tiny kernels",
    steps=8,
    warmup=3,
    active=3,
    cap_s=40,
)
def build_cpu_mask(variant):
    if SMALL:
        cfg, batch, T = dict(vocab=512, d=64, heads=4, ff=128, layers=2, max_len=128), 2, 128
    else:
        cfg, batch, T = dict(vocab=32000, d=1024, heads=16, ff=4096, layers=8, max_len=4096), 4, 4096
    torch.manual_seed(0)
    model = CausalLM(mask_on_device=(variant == "after"), **cfg).to(DEVICE).train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=IS_CUDA)
    data = [(d[:, :-1].contiguous(), d[:, 1:].contiguous())
            for d in torch.randint(0, cfg["vocab"], (3, batch, T + 1), device=DEVICE)]
    st = {"i": 0}

    def step():
        x, y = data[st["i"] % len(data)]
        st["i"] += 1
        with amp():
            logits = model(x)
        loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return Runner(step, extra=lambda: {"batch": batch, "seq": T})


# --------------------------------------------------------------------------------------------
# 7. NO GOOD LEVER: long-context bf16 prefill (GEMMs + flash attention) at the tensor-core roof; the
#    user's change (enable TF32) cannot touch bf16 math.
class PrefillBlock(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, D))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


@workload(
    "prefill_tf32_roof",
    needs=(),
    domain="language (long-context scoring)",
    mode="inference",
    compiled=False,
    description="Scoring 8192-token documents (batch 2) with a 4-layer d=2048 decoder stack written in plain "
    "torch (bf16 weights, SDPA causal, tanh-GELU MLP), under no_grad. I read that H100s need TF32 enabled to be "
    "fast, so I turned it on.",
    fix_before="# (default) torch.backends.cuda.matmul.allow_tf32 = False",
    fix_after="torch.backends.cuda.matmul.allow_tf32 = True",
    expect="~1.0x (<3%): every matmul is already bf16 on tensor cores (1.65 TFLOP of GEMMs + 0.28 TFLOP of flash "
    "attention per layer, ~15-20 ms/step, >85% of GPU time); TF32 only affects fp32 matmuls, of which there are "
    "none; LayerNorm/GELU/residual adds are the remaining few %",
    steps=10,
    warmup=3,
    active=3,
    cap_s=35,
)
def build_prefill(variant):
    if SMALL:
        d, heads, ff, layers, batch, T = 64, 4, 256, 2, 2, 128
    else:
        d, heads, ff, layers, batch, T = 2048, 16, 8192, 4, 2, 8192
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = variant == "after"
    torch.manual_seed(0)
    model = nn.Sequential(*[PrefillBlock(d, heads, ff) for _ in range(layers)]).to(DEVICE, LOW_PRECISION).eval()
    xs = [torch.randn(batch, T, d, device=DEVICE, dtype=LOW_PRECISION) for _ in range(2)]
    st = {"i": 0}

    @torch.no_grad()
    def step():
        st["h"] = model(xs[st["i"] % len(xs)])[:, -1]
        st["i"] += 1

    def close():
        torch.backends.cuda.matmul.allow_tf32 = prev

    return Runner(step, close=close, extra=lambda: {"batch": batch, "seq": T,
                                                    "allow_tf32": torch.backends.cuda.matmul.allow_tf32})


# --------------------------------------------------------------------------------------------
# 8. NO GOOD LEVER: small-batch decode through Llama-70B-sized SwiGLU MLPs is weight-streaming bound
#    (GEMVs at HBM bandwidth); the user's change (torch.compile) only fuses the tiny elementwise ops.
class SwiGLU(nn.Module):
    def __init__(self, d, ff):
        super().__init__()
        kw = dict(bias=False, device=DEVICE, dtype=LOW_PRECISION)
        self.w_norm = nn.Parameter(torch.ones(d, device=DEVICE, dtype=LOW_PRECISION))
        self.gate, self.up, self.down = nn.Linear(d, ff, **kw), nn.Linear(d, ff, **kw), nn.Linear(ff, d, **kw)

    def forward(self, x):
        h = x.float()
        h = (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * self.w_norm
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


@workload(
    "decode_mlp_compile_roof",
    needs=(),
    domain="language (LLM serving)",
    mode="inference",
    compiled=True,
    description="One pipeline stage of a 70B-class model's MLPs (4 SwiGLU blocks, d=8192, ffn=28672, bf16 "
    "weights, fp32 RMSNorm) decoding 4 sequences token by token, under no_grad. I compiled it hoping Inductor "
    "would fuse things.",
    fix_before="stage = Stage().eval()",
    fix_after="stage = torch.compile(Stage().eval())",
    expect="~1.0x (<5%): each token streams 5.6 GB of bf16 weights through 12 skinny GEMMs (M=4) that run at "
    "~85-90% of HBM bandwidth; the RMSNorm/SiLU/mul/add ops touch 4x28672 elements (microseconds), so fusing "
    "them and trimming launches saves almost nothing",
    steps=20,
    warmup=5,
    active=3,
    cap_s=70,
)
def build_decode_mlp(variant):
    d, ff, layers, batch, tokens = (64, 224, 2, 4, 4) if SMALL else (8192, 28672, 4, 4, 4)
    torch.manual_seed(0)
    stage = nn.Sequential(*[SwiGLU(d, ff) for _ in range(layers)]).eval()
    if variant == "after":
        stage = compile_model(stage)
    x0 = torch.randn(batch, d, device=DEVICE, dtype=LOW_PRECISION)
    st = {}

    @torch.no_grad()
    def step():
        x = x0
        for _ in range(tokens):  # feed each token's output back, as a decode loop does
            x = stage(x) * 0.01
        st["x"] = x

    def close():
        torch._dynamo.reset()

    return Runner(step, close=close, extra=lambda: {"batch": batch, "tokens_per_step": tokens,
                                                    "weight_gb": round(3 * d * ff * layers * 2 / 1e9, 2)})


if __name__ == "__main__":
    SUITE.main()
