#!/usr/bin/env python3
"""pending_pairs2: one measured before/after pair for each of ten what-if levers written from a single development
pair (CAPTURE_PENDING in analyzers/whatif/levers/__init__.py): freeze_unoptimized, activations_on_gpu,
logits_to_keep, compute_once, sparse_embedding, weight_only_int8, cross_entropy, embedding_max_norm,
module_round_trip, reduce_on_gpu.

Each workload is a model family and shape other than its lever's development pair, built from a real library with
random weights (Hugging Face transformers from a config, or plain torch modules of a published architecture: NeuMF),
nothing downloaded. BEFORE carries the construct the lever names; AFTER changes the one line in `fix_before` /
`fix_after`. The workloads were written from the levers' docstrings and knob entries alone (not their replay code),
so the measured ratios test the levers' prices on fixes they were not fitted to. The harness is fresh_harness.py
(beside this file): 5 unprofiled timed runs a variant, then one profiled run of 2 active steps (record_shapes).

    python3 pending_pairs2.py --out DIR                          # on the GPU (budget 330 s on one H100/H200)
    DEVICE=cpu SMALL=1 python pending_pairs2.py --out /tmp/pp2   # plumbing dry run (tiny sizes, aot_eager)

SMALL keeps each model's depth and loop counts (its trace's event count) and shrinks widths, batches and tables. What
the CPU dry run cannot show: the int8 product's fused Inductor reduction (aot_eager there), any host/device copy
(module_round_trip's .to('cpu'), reduce_on_gpu's .cpu() and save_on_cpu's offload are host-to-host or no-ops when the
device is the host), bf16 (fp32 there). The models are kept shallow (1-2 layers, 3 tokens) so that each before trace
stays near 90 KB gzipped; compute_once's cannot go below ~100 outermost ops a re-run encoder (its lever's floor)
times three runs, and is the largest.
"""

import contextlib

import torch
import torch.nn as nn
import torch.nn.functional as F
from fresh_harness import DEVICE, IS_CUDA, LOW_PRECISION, SMALL, Runner, Suite, compile_model

SUITE = Suite("pending_pairs2", budget_s=330)
WORKLOADS = SUITE.workloads
workload = SUITE.workload
HF = ("transformers",)


def _autocast():
    """bf16 autocast on the GPU; the CPU dry run stays in fp32 (CPU bf16 autocast only slows the plumbing)."""
    return torch.autocast("cuda", dtype=torch.bfloat16) if IS_CUDA else contextlib.nullcontext()


def _on_device(cls, config, dtype=None):
    """A transformers model from its config, its random weights made on the device (no hub download)."""
    with torch.device(DEVICE):
        model = cls(config)
    return model.to(dtype) if dtype is not None else model


def _ids(vocab, *shape):
    return torch.randint(0, vocab, shape, device=DEVICE)


def _train_step(model, opt, loss_of):
    def step():
        with _autocast():
            loss = loss_of()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


# ---------------------------------------------------------------- weight_only_int8 (first: it compiles, give it room)

def _w8_linear(x, w8, scale):
    """gpt-fast's weight-only int8 product: the int8 weight converted inside the compiled product (at one row Inductor
    turns the mm into a reduction and fuses the conversion: the weight is read at one byte a value)."""
    return F.linear(x, w8.to(x.dtype)) * scale


class W8Linear(nn.Module):
    """nn.Linear's weight as int8 with a per-output-channel scale (symmetric absmax), bias-free like Mistral's."""

    compiled = None

    def __init__(self, lin):
        super().__init__()
        w = lin.weight.detach()
        scale = w.abs().amax(1).clamp(min=1e-8).float() / 127.0                     # [N]
        self.register_buffer("w8", torch.round(w.float() / scale[:, None]).clamp(-127, 127).to(torch.int8))
        self.register_buffer("scale", scale.to(w.dtype))

    def forward(self, x):
        if W8Linear.compiled is None:
            W8Linear.compiled = compile_model(_w8_linear, dynamic=False)
        return W8Linear.compiled(x, self.w8, self.scale)


def quantize_int8_(model):
    """Every nn.Linear of the model (the head too, as gpt-fast does) swapped for W8Linear, in place."""
    if IS_CUDA:
        import torch._inductor.config as inductor_config

        inductor_config.coordinate_descent_tuning = True     # gpt-fast's setting: the one-row mm -> fused reduction
    if hasattr(torch._dynamo.config, "recompile_limit"):
        torch._dynamo.config.recompile_limit = 64            # one graph per weight shape (5 here)
    for name, mod in list(model.named_modules()):
        for child_name, child in list(mod.named_children()):
            if isinstance(child, nn.Linear):
                setattr(mod, child_name, W8Linear(child))
    if IS_CUDA:
        torch.cuda.empty_cache()
    return model


@workload(
    "mistral_decode_bf16_weights",
    needs=HF,
    domain="language",
    mode="inference",
    compiled=False,
    description="A Mistral-architecture decoder (transformers MistralForCausalLM from a config, random bf16 weights: "
    "2 layers at Llama-70B widths, hidden 8192, MLP 28672, 64 heads / 8 KV heads, vocab 32000; 2.2 B parameters, "
    "3.9 GB of them streamed a token) decoding one token a step at batch 1 with a KV cache, eager: every product is "
    "one row against a big 2-D weight, read from HBM at bf16's two bytes a value.",
    fix_before="model = MistralForCausalLM(config).to(torch.bfloat16)  # bf16 weights, eager",
    fix_after="quantize_int8_(model)  # each nn.Linear -> int8 weight + per-channel scale, torch.compile'd "
              "F.linear(x, w8.to(bf16)) * scale (gpt-fast)",
    expect="the weights' bytes halve: ~1.6-1.9x on the products, less the compiled wrapper's per-call host time "
           "(15 compiled calls a token); the attention over a short cache and the norms stay",
    steps=8, warmup=3, active=2, cap_s=150,    # the after compiles 5 graphs (one a weight shape), tuned
)
def build_mistral_int8(variant):
    from transformers import MistralConfig, MistralForCausalLM

    if SMALL:
        cfg = MistralConfig(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    else:
        cfg = MistralConfig(vocab_size=32000, hidden_size=8192, intermediate_size=28672, num_hidden_layers=2,
                            num_attention_heads=64, num_key_value_heads=8, max_position_embeddings=4096)
    model = _on_device(MistralForCausalLM, cfg, LOW_PRECISION).eval()
    if variant == "after":
        quantize_int8_(model)
    prompt = _ids(cfg.vocab_size, 1, 16)
    st = {}

    @torch.inference_mode()
    def prepare():
        # the prompt fed one token at a time: every product stays one row (one compiled graph a weight shape)
        cache = None
        for i in range(prompt.shape[1]):
            out = model(input_ids=prompt[:, i:i + 1], past_key_values=cache, use_cache=True)
            cache = out.past_key_values
        st["cache"], st["tok"] = cache, out.logits[:, -1:].argmax(-1)

    @torch.inference_mode()
    def step():
        out = model(input_ids=st["tok"], past_key_values=st["cache"], use_cache=True)
        st["cache"], st["tok"] = out.past_key_values, out.logits[:, -1:].argmax(-1)

    return Runner(step, prepare=prepare, extra=lambda: {"int8": variant == "after"})


# ---------------------------------------------------------------- freeze_unoptimized

@workload(
    "bert_linear_probe_unfrozen",
    needs=HF,
    domain="language",
    mode="training",
    compiled=False,
    description="A linear probe on a BERT encoder (transformers BertForSequenceClassification from a config: "
    "BERT-base's widths, hidden 768, vocab 30522, one layer to keep the trace small; 4 labels), batch 64 x 256 "
    "tokens, bf16 autocast, fused AdamW holding only the classifier's weight and bias; the encoder still requires "
    "grad, so the backward runs through the pooler, the layer and the embeddings every step.",
    fix_before="opt = AdamW(model.classifier.parameters())  # model.bert still requires grad",
    fix_after="model.bert.requires_grad_(False)",
    expect="the backward through the pooler, the layer and the embedding table goes (about twice the forward's GPU "
           "time): ~2-2.5x",
    steps=8, warmup=3, active=2, cap_s=30,
)
def build_bert_probe(variant):
    from transformers import BertConfig, BertForSequenceClassification

    if SMALL:
        cfg = BertConfig(vocab_size=500, hidden_size=64, num_hidden_layers=1, num_attention_heads=4,
                         intermediate_size=128, num_labels=4)
        batch, seq = 4, 32
    else:
        cfg = BertConfig(num_hidden_layers=1, num_labels=4)   # BERT-base's widths; 1 layer keeps the trace small
        batch, seq = 64, 256
    model = _on_device(BertForSequenceClassification, cfg).train()
    if variant == "after":
        model.bert.requires_grad_(False)
    opt = torch.optim.AdamW(model.classifier.parameters(), lr=1e-3, fused=True)
    ids, labels = _ids(cfg.vocab_size, batch, seq), _ids(4, batch)
    return Runner(_train_step(model, opt, lambda: model(input_ids=ids, labels=labels).loss))


# ---------------------------------------------------------------- activations_on_gpu

@workload(
    "convnext_activations_offloaded",
    needs=HF,
    domain="vision",
    mode="training",
    compiled=False,
    description="A ConvNeXt image classifier (transformers ConvNextForImageClassification from a config: two "
    "stages of one block, widths 96-192, 100 classes) trained at batch 64 x 3 x 224 x 224, bf16 autocast, its "
    "forward under torch.autograd.graph.save_on_cpu(pin_memory=True): every tensor autograd saves goes to the host "
    "in the forward (a blocking copy each) and comes back in the backward.",
    fix_before="with torch.autograd.graph.save_on_cpu(pin_memory=True): loss = model(pixel_values=x, labels=y).loss",
    fix_after="loss = model(pixel_values=x, labels=y).loss",
    expect="the saved activations' copies both ways (~0.7 GB each way a step over PCIe, tens of ms) and their syncs "
           "go, against a few ms of compute: ~4-10x",
    steps=6, warmup=2, active=2, cap_s=35,
)
def build_convnext_offload(variant):
    from transformers import ConvNextConfig, ConvNextForImageClassification

    if SMALL:
        cfg = ConvNextConfig(num_stages=2, depths=[1, 1], hidden_sizes=[8, 16], num_labels=10)
        batch, size = 2, 64
    else:   # ConvNeXt-T's first two stages' widths, one block each: few ops (a small trace), big activations
        cfg = ConvNextConfig(num_stages=2, depths=[1, 1], hidden_sizes=[96, 192], num_labels=100)
        batch, size = 64, 224
    model = _on_device(ConvNextForImageClassification, cfg).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(batch, 3, size, size, device=DEVICE)
    y = _ids(cfg.num_labels, batch)
    offload = variant == "before"

    def loss_of():
        ctx = torch.autograd.graph.save_on_cpu(pin_memory=True) if offload else contextlib.nullcontext()
        with ctx:
            return model(pixel_values=x, labels=y).loss

    return Runner(_train_step(model, opt, loss_of), extra=lambda: {"save_on_cpu": offload})


# ---------------------------------------------------------------- logits_to_keep

@workload(
    "gpt2_last_token_scorer_full_logits",
    needs=HF,
    domain="language",
    mode="inference",
    compiled=False,
    description="A GPT-2 LM (transformers GPT2LMHeadModel from a config: 6 layers, width 768, vocab 50257, bf16) "
    "scoring 8 prompts of 512 tokens by their next token: the head projects all 4,096 positions to the vocabulary "
    "and the program keeps logits[:, -1] (8 rows of 4,096).",
    fix_before="last = model(input_ids=ids).logits[:, -1]",
    fix_after="last = model(input_ids=ids, logits_to_keep=1).logits[:, -1]",
    expect="the head's GEMM (4096 x 768 x 50257: 0.32 TFLOP, about as much as the 6 layers) and its 0.4 GB output "
           "go: ~1.5-2x",
    steps=8, warmup=3, active=2, cap_s=30,
)
def build_gpt2_scorer(variant):
    # GPT2LMHeadModel takes logits_to_keep from transformers 4.50 on (an older one fails the after: an error entry)
    from transformers import GPT2Config, GPT2LMHeadModel

    if SMALL:
        cfg = GPT2Config(vocab_size=2000, n_positions=128, n_embd=64, n_layer=2, n_head=4)
        batch, seq = 2, 64
    else:
        cfg = GPT2Config(n_layer=6)     # GPT-2 small's width, vocab and positions; half its layers
        batch, seq = 8, 512
    model = _on_device(GPT2LMHeadModel, cfg, LOW_PRECISION).eval()
    ids = _ids(cfg.vocab_size, batch, seq)
    keep = {"logits_to_keep": 1} if variant == "after" else {}

    @torch.inference_mode()
    def step():
        last = model(input_ids=ids, **keep).logits[:, -1]
        last.argmax(-1)

    return Runner(step)


# ---------------------------------------------------------------- compute_once

@workload(
    "t5_summarize_reencodes_source",
    needs=HF,
    domain="language",
    mode="inference",
    compiled=False,
    description="A T5 encoder-decoder (transformers T5ForConditionalGeneration from a config: width 512, 2 encoder "
    "layers and 1 decoder layer, vocab 32128, bf16) greedily decoding 3 tokens for 16 documents of 384 tokens, "
    "without a cache, each token's call passing input_ids=src: the encoder re-runs over the same source at every "
    "token while the decoder's input grows by one.",
    fix_before="out = model(input_ids=src, decoder_input_ids=dec, use_cache=False)",
    fix_after="out = model(encoder_outputs=enc, decoder_input_ids=dec, use_cache=False)  "
              "# enc = model.get_encoder()(input_ids=src), once before the loop",
    expect="2 of the 3 encoder runs go (the encoder over 6,144 tokens is most of each call's work): ~2-2.5x",
    steps=4, warmup=2, active=2, cap_s=35,
)
def build_t5_reencode(variant):
    from transformers import T5Config, T5ForConditionalGeneration

    if SMALL:
        cfg = T5Config(vocab_size=500, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=1,
                       num_heads=4, decoder_start_token_id=0)
        batch, src_len = 2, 32
    else:
        cfg = T5Config(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048, num_layers=2, num_decoder_layers=1,
                       num_heads=8, decoder_start_token_id=0)
        batch, src_len = 16, 384
    model = _on_device(T5ForConditionalGeneration, cfg, LOW_PRECISION).eval()
    src = _ids(cfg.vocab_size, batch, src_len)
    once = variant == "after"
    new_tokens = 3

    @torch.inference_mode()
    def step():
        dec = torch.zeros(batch, 1, dtype=torch.long, device=DEVICE)
        enc = model.get_encoder()(input_ids=src) if once else None
        for _ in range(new_tokens):
            if once:
                out = model(encoder_outputs=enc, decoder_input_ids=dec, use_cache=False)
            else:
                out = model(input_ids=src, decoder_input_ids=dec, use_cache=False)
            dec = torch.cat([dec, out.logits[:, -1:].argmax(-1)], dim=1)

    return Runner(step, extra=lambda: {"new_tokens": new_tokens, "encoder_once": once})


# ---------------------------------------------------------------- sparse_embedding

class NeuMF(nn.Module):
    """Neural collaborative filtering (He et al. 2017, NeuMF): a GMF branch (user * item embeddings) and an MLP
    branch (concatenated embeddings -> 128-64-32-16) over their own user and item tables, fused by one linear."""

    def __init__(self, users, items, dim, sparse):
        super().__init__()

        def table(n):
            return nn.Embedding(n, dim, sparse=sparse)

        self.gmf_user, self.gmf_item, self.mlp_user, self.mlp_item = table(users), table(items), table(users), \
            table(items)
        self.mlp = nn.Sequential(nn.Linear(2 * dim, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                                 nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU())
        self.out = nn.Linear(dim + 16, 1)

    def forward(self, u, i):
        gmf = self.gmf_user(u) * self.gmf_item(i)
        mlp = self.mlp(torch.cat([self.mlp_user(u), self.mlp_item(i)], dim=-1))
        return self.out(torch.cat([gmf, mlp], dim=-1)).squeeze(-1)


@workload(
    "neumf_dense_table_grads",
    needs=(),
    domain="recommendation",
    mode="training",
    compiled=False,
    description="NeuMF (plain torch: GMF + MLP branches, four fp32 tables of 64: users 4M rows twice, items 1M "
    "twice, 2.6 GB of tables) trained with SGD on 16,384 (user, item) clicks a step: each table gets a dense "
    "gradient of all its rows, and SGD reads and writes every row, for 16k rows looked up.",
    fix_before="nn.Embedding(n, 64)",
    fix_after="nn.Embedding(n, 64, sparse=True)",
    expect="the table-sized gradients (zero-fill + scatter) and SGD's pass over 2.6 GB of rows go: ~4-10x",
    steps=6, warmup=2, active=2, cap_s=35,
)
def build_neumf(variant):
    users, items, dim, batch = (20_000, 5_000, 16, 256) if SMALL else (4_000_000, 1_000_000, 64, 16_384)
    with torch.device(DEVICE):       # 2.6 GB of tables initialised where they live
        model = NeuMF(users, items, dim, sparse=variant == "after")
    opt = torch.optim.SGD(model.parameters(), lr=0.05)     # plain SGD takes dense and sparse gradients alike
    u, i = _ids(users, batch), _ids(items, batch)
    clicks = torch.randint(0, 2, (batch,), device=DEVICE).float()

    def step():
        loss = F.binary_cross_entropy_with_logits(model(u, i), clicks)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return Runner(step, extra=lambda: {"sparse": variant == "after", "table_rows": 2 * (users + items)})


# ---------------------------------------------------------------- cross_entropy

class UNet(nn.Module):
    """U-Net (Ronneberger et al. 2015), three levels: two 3x3 conv-BN-ReLU a level, max-pool down, transposed conv
    up, skip concatenations, a 1x1 conv to the classes."""

    def __init__(self, classes, w):
        super().__init__()

        def block(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                                 nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())

        self.down1, self.down2, self.mid = block(3, w), block(w, 2 * w), block(2 * w, 4 * w)
        self.up2, self.dec2 = nn.ConvTranspose2d(4 * w, 2 * w, 2, stride=2), block(4 * w, 2 * w)
        self.up1, self.dec1 = nn.ConvTranspose2d(2 * w, w, 2, stride=2), block(2 * w, w)
        self.head = nn.Conv2d(w, classes, 1)

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(F.max_pool2d(d1, 2))
        m = self.mid(F.max_pool2d(d2, 2))
        u2 = self.dec2(torch.cat([self.up2(m), d2], 1))
        return self.head(self.dec1(torch.cat([self.up1(u2), d1], 1)))


@workload(
    "unet_onehot_pixel_loss",
    needs=(),
    domain="vision",
    mode="training",
    compiled=False,
    description="A U-Net (plain torch: three levels, widths 32-64-128, 150 ADE20k classes) trained at batch 8 x 3 x "
    "256 x 256, bf16 autocast, the loss written by hand over a one-hot target permuted to [N, C, H, W] (524k pixels "
    "x 150 classes).",
    fix_before="loss = -(F.one_hot(y, C).permute(0, 3, 1, 2).float() * F.log_softmax(logits.float(), 1)).sum(1).mean()",
    fix_after="loss = F.cross_entropy(logits, y)",
    expect="the [8, 150, 256, 256] one-hot (int64 then fp32), the multiply, the sum and the backward multiply go "
           "(0.3-0.6 GB each) beside a conv net's few ms: ~1.3-2x",
    steps=6, warmup=2, active=2, cap_s=30,
)
def build_unet_onehot(variant):
    C, batch, size, w = (10, 2, 64, 8) if SMALL else (150, 8, 256, 32)
    with torch.device(DEVICE):
        model = UNet(C, w).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    x = torch.randn(batch, 3, size, size, device=DEVICE)
    y = _ids(C, batch, size, size)
    by_hand = variant == "before"

    def loss_of():
        logits = model(x)                                          # [B, C, H, W]
        if by_hand:
            return -(F.one_hot(y, C).permute(0, 3, 1, 2).float() * F.log_softmax(logits.float(), 1)).sum(1).mean()
        return F.cross_entropy(logits, y)

    return Runner(_train_step(model, opt, loss_of))


# ---------------------------------------------------------------- embedding_max_norm

@workload(
    "distilbert_ner_embedding_max_norm",
    needs=HF,
    domain="language",
    mode="training",
    compiled=False,
    description="A token classifier (transformers DistilBertForTokenClassification from a config: 1 layer, width "
    "256, vocab 30522, 9 NER tags) trained at batch 32 x 128 tokens, bf16 autocast, with a norm constraint "
    "(max_norm=1.0) on its word and position embeddings: both tables renormalised on every lookup.",
    fix_before="for e in (emb.word_embeddings, emb.position_embeddings): e.max_norm = 1.0",
    fix_after="# (line dropped: the tables' max_norm stays None)",
    expect="two embedding_renorm_ chains a step (sort, unique, norms, scale) against a small model's step: "
           "~10-25%",
    steps=8, warmup=3, active=2, cap_s=25,
)
def build_distilbert_maxnorm(variant):
    from transformers import DistilBertConfig, DistilBertForTokenClassification

    if SMALL:
        cfg = DistilBertConfig(vocab_size=500, dim=32, n_layers=1, n_heads=2, hidden_dim=64, num_labels=9)
        batch, seq = 4, 32
    else:
        cfg = DistilBertConfig(dim=256, n_layers=1, n_heads=4, hidden_dim=1024, num_labels=9)
        batch, seq = 32, 128
    model = _on_device(DistilBertForTokenClassification, cfg).train()
    emb = model.distilbert.embeddings
    if variant == "before":
        for e in (emb.word_embeddings, emb.position_embeddings):
            e.max_norm = 1.0
    opt = torch.optim.AdamW(model.parameters(), lr=5e-5, fused=True)
    ids, tags = _ids(cfg.vocab_size, batch, seq), _ids(9, batch, seq)
    return Runner(_train_step(model, opt, lambda: model(input_ids=ids, labels=tags).loss))


# ---------------------------------------------------------------- module_round_trip

@workload(
    "resnet18_offloaded_between_requests",
    needs=HF,
    domain="vision",
    mode="inference",
    compiled=False,
    description="A ResNet-18 classifier (transformers ResNetForImageClassification from a config: basic blocks "
    "[2, 2, 2, 2], widths 64-512, 1000 classes, bf16) serving batches of 32 x 3 x 224 x 224: before each request "
    "model.to('cuda'), after it model.to('cpu') to free the device (23 MB of weights and BN buffers, ~100 tensors, "
    "each way a request, to and from pageable memory).",
    fix_before="model.to('cpu')  # after each request",
    fix_after="# (line dropped: the model stays on the GPU; the next model.to('cuda') moves nothing)",
    expect="the per-tensor copies both ways and their blocking syncs go; the forward (~1-2 ms) stays: ~2-5x",
    steps=6, warmup=2, active=2, cap_s=30,
)
def build_resnet_round_trip(variant):
    from transformers import ResNetConfig, ResNetForImageClassification

    if SMALL:
        cfg = ResNetConfig(embedding_size=8, hidden_sizes=[8, 16, 16, 32], depths=[1, 1, 1, 1], layer_type="basic",
                           num_labels=10)
        batch, size = 2, 64
    else:
        cfg = ResNetConfig(embedding_size=64, hidden_sizes=[64, 128, 256, 512], depths=[2, 2, 2, 2],
                           layer_type="basic", num_labels=1000)
        batch, size = 32, 224
    model = _on_device(ResNetForImageClassification, cfg, LOW_PRECISION).eval()
    x = torch.randn(batch, 3, size, size, device=DEVICE, dtype=LOW_PRECISION)
    offload = variant == "before"
    if offload:
        model.to("cpu")    # it waits on the host between requests

    def step():
        model.to(DEVICE)
        with torch.no_grad():
            model(pixel_values=x).logits.argmax(-1)
        if offload:
            model.to("cpu")

    return Runner(step, extra=lambda: {"offload_between_requests": offload,
                                       "dry_run_note": None if IS_CUDA else "device is the host: nothing moves"})


# ---------------------------------------------------------------- reduce_on_gpu

@workload(
    "bart_greedy_host_argmax",
    needs=HF,
    domain="language",
    mode="inference",
    compiled=False,
    description="A BART encoder-decoder (transformers BartForConditionalGeneration from a config: width 512, 1 + 1 "
    "layers, vocab 50265, bf16) greedily decoding 3 tokens for 8 sources of 128 tokens with a KV cache, the next "
    "token picked on the host: logits[:, -1].float().cpu().argmax(-1) then .to(device), each token.",
    fix_before="nxt = out.logits[:, -1].float().cpu().argmax(-1, keepdim=True).to(device)",
    fix_after="nxt = out.logits[:, -1].argmax(-1, keepdim=True)",
    expect="3 blocking round trips a step (a 1.6 MB copy, a sync, a host argmax over 8 x 50265, a tiny copy back) "
           "go; eager decode stays host-bound: ~5-15%",
    steps=4, warmup=2, active=2, cap_s=30,
)
def build_bart_host_argmax(variant):
    from transformers import BartConfig, BartForConditionalGeneration

    if SMALL:
        cfg = BartConfig(vocab_size=500, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                         decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
                         max_position_embeddings=128)
        batch, src_len = 2, 16
    else:
        cfg = BartConfig(vocab_size=50265, d_model=512, encoder_layers=1, decoder_layers=1, encoder_attention_heads=8,
                         decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048)
        batch, src_len = 8, 128
    model = _on_device(BartForConditionalGeneration, cfg, LOW_PRECISION).eval()
    src = _ids(cfg.vocab_size, batch, src_len)
    on_host = variant == "before"
    new_tokens = 3

    @torch.inference_mode()
    def step():
        enc = model.get_encoder()(input_ids=src)
        nxt = torch.full((batch, 1), cfg.decoder_start_token_id, dtype=torch.long, device=DEVICE)
        cache = None
        for _ in range(new_tokens):
            out = model(encoder_outputs=enc, decoder_input_ids=nxt, past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            if on_host:
                nxt = out.logits[:, -1].float().cpu().argmax(-1, keepdim=True).to(DEVICE)
            else:
                nxt = out.logits[:, -1].argmax(-1, keepdim=True)

    return Runner(step, extra=lambda: {"new_tokens": new_tokens, "argmax_on_host": on_host})


if __name__ == "__main__":
    SUITE.main()
