#!/usr/bin/env python3
"""pairs6: four before/after pairs of everyday mistakes, in model families no lever was written from.

Each BEFORE is a real-library workload (Hugging Face transformers from a config, random weights, nothing
downloaded) written the way a first version of a script often is; AFTER changes the one line a PyTorch engineer
would change first (`fix_before` -> `fix_after`). They were written from what an engineer would do, not from the
levers' code, so their measured ratios test the Next line's knob and price on code it was not fitted to (a test set:
never tune on them). The harness is fresh_harness.py: 5 unprofiled timed runs a variant, then one profiled run.

    python3 pairs6.py --out DIR                          # on the GPU (budget 200 s on one H100/H200)
    DEVICE=cpu SMALL=1 python pairs6.py --out /tmp/p6     # plumbing dry run (tiny sizes)
"""

import contextlib

import torch
from fresh_harness import DEVICE, IS_CUDA, SMALL, Runner, Suite, amp

SUITE = Suite("pairs6", budget_s=200)
WORKLOADS = SUITE.workloads
workload = SUITE.workload
HF = ("transformers",)


def _on_device(cls, config):
    """A transformers model from its config, its random weights made on the device (no hub download)."""
    with torch.device(DEVICE):
        return cls(config)


def _ids(vocab, *shape):
    return torch.randint(0, vocab, shape, device=DEVICE)


def _train_step(model, opt, ids, autocast=True):
    """One causal-LM training step on `ids` (the labels too), its forward under bf16 autocast or not."""
    def step():
        with amp() if autocast else contextlib.nullcontext():
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


@workload(
    "deberta_loss_item_every_step",
    needs=HF,
    domain="language",
    mode="training",
    compiled=False,
    description="DeBERTa-v2 sequence classification (transformers DebertaV2ForSequenceClassification from a config: "
    "hidden 384, 2 layers, 6 heads; 3 labels), batch 16 x 128 tokens, bf16 autocast, fused AdamW; the loop logs "
    "loss.item() and the gradient norm's .item() every step, each a blocking device-to-host read.",
    fix_before="running += loss.item(); norms.append(total_norm.item())  # every step",
    fix_after="running += loss.detach(); norms.append(total_norm.detach())  # read once at the end",
    expect="the two drains a step go; the host queues the next step's launches during this one: a few percent to "
           "~20% on a step this short",
    steps=20, warmup=3, active=3, cap_s=40,
)
def build_deberta_item(variant):
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

    if SMALL:
        cfg = DebertaV2Config(vocab_size=500, hidden_size=64, num_hidden_layers=1, num_attention_heads=4,
                              intermediate_size=128, num_labels=3)
        batch, seq = 2, 16
    else:
        cfg = DebertaV2Config(vocab_size=32000, hidden_size=384, num_hidden_layers=2, num_attention_heads=6,
                              intermediate_size=1536, num_labels=3)
        batch, seq = 16, 128
    model = _on_device(DebertaV2ForSequenceClassification, cfg).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=IS_CUDA)
    ids, labels = _ids(cfg.vocab_size, batch, seq), _ids(3, batch)
    st = {"running": 0.0, "norms": []}

    def step():
        with amp():
            loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        total_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if variant == "before":
            st["running"] += loss.item()
            st["norms"].append(total_norm.item())
        else:
            st["running"] += loss.detach()
            st["norms"].append(total_norm.detach())

    return Runner(step)


@workload(
    "llama_train_eager_attention",
    needs=HF,
    domain="language",
    mode="training",
    compiled=False,
    description="A Llama-architecture decoder trained (transformers LlamaForCausalLM from a config: hidden 1024, "
    "4 layers, 16 heads, MLP 2816, vocab 32000), batch 8 x 1024 tokens, bf16 autocast, fused AdamW, built with "
    "attn_implementation='eager': the attention is matmul, softmax and matmul with the 1024x1024 score matrix "
    "written and read per head.",
    fix_before="LlamaForCausalLM._from_config(cfg, attn_implementation='eager')",
    fix_after="LlamaForCausalLM._from_config(cfg, attn_implementation='sdpa')  # flash attention",
    expect="the score matrix's traffic and the softmax kernels go: ~1.2-1.5x on the step",
    steps=5, warmup=2, active=2, cap_s=50,
)
def build_llama_attention(variant):
    from transformers import LlamaConfig, LlamaForCausalLM

    if SMALL:
        cfg = LlamaConfig(vocab_size=500, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                          num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=128)
        batch, seq = 2, 32
    else:
        cfg = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=4,
                          num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=2048)
        batch, seq = 8, 1024
    impl = "eager" if variant == "before" else "sdpa"
    with torch.device(DEVICE):
        model = LlamaForCausalLM._from_config(cfg, attn_implementation=impl).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=IS_CUDA)
    return Runner(_train_step(model, opt, _ids(cfg.vocab_size, batch, seq)))


@workload(
    "segformer_eval_with_autograd",
    needs=HF,
    domain="vision",
    mode="inference",
    compiled=False,
    description="SegFormer semantic segmentation served in eval mode (transformers SegformerForSemanticSegmentation "
    "from a config: the B0 widths, 19 labels), batch 8 of 512x512 images, fp32, without torch.no_grad(): autograd "
    "records every op and keeps the activations alive.",
    fix_before="logits = model(pixel_values=x).logits  # model.eval() only",
    fix_after="with torch.inference_mode(): logits = model(pixel_values=x).logits",
    expect="autograd's per-op bookkeeping and the saved activations go: a few percent of host time a step, more if "
           "the host bounds the step",
    steps=10, warmup=3, active=2, cap_s=40,
)
def build_segformer(variant):
    from transformers import SegformerConfig, SegformerForSemanticSegmentation

    cfg = SegformerConfig(num_labels=19)
    size, batch = (64, 1) if SMALL else (512, 8)
    model = _on_device(SegformerForSemanticSegmentation, cfg).eval()
    x = torch.randn(batch, 3, size, size, device=DEVICE)

    def step():
        if variant == "before":
            model(pixel_values=x).logits.argmax(1)
        else:
            with torch.inference_mode():
                model(pixel_values=x).logits.argmax(1)

    return Runner(step)


@workload(
    "gpt_neox_train_fp32",
    needs=HF,
    domain="language",
    mode="training",
    compiled=False,
    description="A GPT-NeoX-architecture decoder trained in fp32 (transformers GPTNeoXForCausalLM from a config: "
    "hidden 1024, 4 layers, 16 heads, vocab 50432), batch 8 x 512 tokens, fused AdamW, no autocast: every product "
    "runs in fp32 (TF32 off, PyTorch's default for matmuls).",
    fix_before="loss = model(input_ids=ids, labels=ids).loss",
    fix_after="with torch.autocast('cuda', dtype=torch.bfloat16): loss = model(input_ids=ids, labels=ids).loss",
    expect="the products move to bf16 tensor cores: ~2-3x on the step",
    steps=5, warmup=2, active=2, cap_s=50,
)
def build_neox_fp32(variant):
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    if SMALL:
        cfg = GPTNeoXConfig(vocab_size=500, hidden_size=64, intermediate_size=256, num_hidden_layers=1,
                            num_attention_heads=4, max_position_embeddings=128)
        batch, seq = 2, 32
    else:
        cfg = GPTNeoXConfig(vocab_size=50432, hidden_size=1024, intermediate_size=4096, num_hidden_layers=4,
                            num_attention_heads=16, max_position_embeddings=2048)
        batch, seq = 8, 512
    model = _on_device(GPTNeoXForCausalLM, cfg).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=IS_CUDA)
    return Runner(_train_step(model, opt, _ids(cfg.vocab_size, batch, seq), autocast=variant == "after"))


if __name__ == "__main__":
    SUITE.main()
