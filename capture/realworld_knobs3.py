"""Ground truth for three more knobs, each made in real-library code (the pairs their levers are fitted to):

    sdpa             F.scaled_dot_product_attention in place of softmax(q @ k^T * scale) @ v written by hand
                     (nanoGPT's `flash` switch; HF's attn_implementation="eager" against "sdpa")
    cudnn_benchmark  torch.backends.cudnn.benchmark = True for convolutions cuDNN's heuristics pick for
    inference_mode   an eval forward run with autograd on (parameters requiring grad, no torch.no_grad)
                     against the same forward under torch.inference_mode()

Three workloads a knob. cuDNN keys its plan cache without the benchmark flag (Conv_v8.cpp's run_single_conv:
a plan found by either mode serves both), so the cudnn_benchmark workloads run each variant in its own
process (own_process); their reps interleave profiled and unprofiled windows but not the two variants.
Random weights, nothing downloads; torchvision and transformers are imported in setup().
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from tracetriage.analyzers.whatif.levers import CUDNN_BENCHMARK, INFERENCE_MODE, SDPA
from tracetriage.capture.realworld_common import RealWorkload

# --- sdpa: attention written by hand -> F.scaled_dot_product_attention ------------------------------------


class _Attention(nn.Module):
    """Multi-head self-attention as nanoGPT's CausalSelfAttention writes it: one qkv Linear, then either the
    math by hand (a (B, H, T, T) score matrix written, masked, softmaxed and read back) or SDPA's fused kernel."""

    def __init__(self, dim: int, heads: int, causal: bool, fused: bool, seq: int):
        super().__init__()
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.heads, self.causal, self.fused = heads, causal, fused
        if causal:
            self.register_buffer("mask", torch.tril(torch.ones(seq, seq, dtype=torch.bool)), persistent=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if self.fused:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            if self.causal:
                att = att.masked_fill(~self.mask[:t, :t], float("-inf"))
            y = att.softmax(dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class _Block(nn.Module):
    def __init__(self, dim: int, heads: int, causal: bool, fused: bool, seq: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = _Attention(dim, heads, causal, fused, seq)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


def _blocks(n: int, dim: int, heads: int, *, causal: bool, fused: bool, seq: int) -> nn.Sequential:
    return nn.Sequential(*[_Block(dim, heads, causal, fused, seq) for _ in range(n)])


@dataclass
class SdpaGPTTrain(RealWorkload):
    """A nanoGPT-style causal stack (4 blocks, 768 wide, 12 heads) trained at batch 8 x 1024 under
    autocast(bf16) with AdamW(fused): the hand-written masked softmax writes 8x12x1024x1024 scores a layer
    (192 MiB in bf16, more in fp32 for the softmax) vs F.scaled_dot_product_attention(is_causal=True)."""
    kind: ClassVar[str] = "sdpa_gpt_train"
    levers: ClassVar[tuple[str, ...]] = (SDPA,)
    about: ClassVar[str] = ("nanoGPT-style causal stack (4 blocks, 768, 12 heads) train step at batch 8 x 1024 under "
                            "autocast(bf16), attention softmax(q@k^T*scale).masked_fill(causal) @ v by hand; sdpa: "
                            "F.scaled_dot_product_attention(q, k, v, is_causal=True)")
    batch: int = 8
    seq: int = 1024
    iters: int = 3

    def setup(self):
        b, t, d, h, n = (self.batch, self.seq, 768, 12, 4) if self.gpu else (2, 32, 64, 4, 2)
        torch.manual_seed(0)
        self.net = _blocks(n, d, h, causal=True, fused=self.fix == SDPA, seq=t).to(self.device).train()
        self.opt = torch.optim.AdamW(self.net.parameters(), lr=1e-4, fused=self.gpu or None)
        self.x = torch.randn(b, t, d, device=self.device)
        self.dev_type = torch.device(self.device).type
        self.record.update(score_bytes_per_layer=b * h * t * t * 2)

    def step(self):
        with torch.autocast(self.dev_type, dtype=torch.bfloat16, enabled=self.gpu):
            loss = self.net(self.x).float().square().mean()
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()
        return loss


@dataclass
class SdpaViTInfer(RealWorkload):
    """A ViT-B-sized encoder (6 blocks, 768 wide, 12 heads, no mask) at ViT-B/16-at-384's 577 tokens, batch 32,
    bf16 inference: hand-written softmax(q @ k^T) @ v vs F.scaled_dot_product_attention."""
    kind: ClassVar[str] = "sdpa_vit_infer"
    levers: ClassVar[tuple[str, ...]] = (SDPA,)
    about: ClassVar[str] = ("ViT-B-sized encoder (6 blocks, 768, 12 heads) bf16 eval forward at batch 32 x 577 tokens "
                            "under inference_mode, attention softmax(q@k^T*scale) @ v by hand; sdpa: "
                            "F.scaled_dot_product_attention(q, k, v)")
    batch: int = 32
    seq: int = 577
    iters: int = 4

    def setup(self):
        b, t, d, h, n = (self.batch, self.seq, 768, 12, 6) if self.gpu else (2, 17, 64, 4, 2)
        dt = torch.bfloat16 if self.gpu else torch.float32
        torch.manual_seed(0)
        self.net = _blocks(n, d, h, causal=False, fused=self.fix == SDPA, seq=t).to(self.device, dt).eval()
        self.x = torch.randn(b, t, d, device=self.device, dtype=dt)

    @torch.inference_mode()
    def step(self):
        return self.net(self.x)


def _gpt2(layers: int, width: int, heads: int, device: str, gpu: bool, **config) -> nn.Module:
    """An HF GPT-2 from a config, random weights (nothing downloads); tiny on the CPU."""
    from transformers import AutoModelForCausalLM, GPT2Config

    cfg = GPT2Config(n_layer=layers if gpu else 1, n_embd=width if gpu else 64, n_head=heads if gpu else 2,
                     vocab_size=50257 if gpu else 512, n_positions=1024)
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(cfg, **config).to(device)


@dataclass
class SdpaHFGPT2(RealWorkload):
    """An HF GPT-2 (6 layers, 768) bf16 forward at batch 8 x 1024 built with attn_implementation="eager"
    (transformers' eager_attention_forward: matmul, causal mask, softmax, matmul) vs "sdpa"."""
    kind: ClassVar[str] = "sdpa_hf_gpt2"
    levers: ClassVar[tuple[str, ...]] = (SDPA,)
    needs: ClassVar[tuple[str, ...]] = ("transformers",)
    about: ClassVar[str] = ("HF GPT-2 from a config (6 layers, 768, random weights) bf16 eval forward at batch 8 x "
                            "1024, attn_implementation='eager'; sdpa: attn_implementation='sdpa'")
    batch: int = 8
    seq: int = 1024
    iters: int = 3

    def setup(self):
        impl = "sdpa" if self.fix == SDPA else "eager"
        self.model = _gpt2(6, 768, 12, self.device, self.gpu, attn_implementation=impl).eval()
        if self.gpu:
            self.model.to(torch.bfloat16)
        got = getattr(self.model.config, "_attn_implementation", None)
        if got != impl:        # the pair would measure nothing: say so rather than record it
            raise RuntimeError(f"asked transformers for attn_implementation={impl!r}, the model has {got!r}")
        b, s = (self.batch, self.seq) if self.gpu else (1, 16)
        self.ids = torch.randint(0, self.model.config.vocab_size, (b, s), device=self.device)
        self.record.update(attn_implementation=got)

    @torch.inference_mode()
    def step(self):
        return self.model(self.ids).logits


# --- cudnn_benchmark: cuDNN's heuristics -> its auto-tuner ------------------------------------------------------

@dataclass
class _CudnnBenchmark(RealWorkload):
    """torch.backends.cudnn.benchmark False (PyTorch's default: cuDNN's heuristics pick each convolution's plan)
    or True (the first call of each shape times the candidates, in the warm-up windows). A process a variant."""
    levers: ClassVar[tuple[str, ...]] = (CUDNN_BENCHMARK,)
    needs: ClassVar[tuple[str, ...]] = ("torchvision",)
    own_process: ClassVar[bool] = True

    def setup(self):
        torch.backends.cudnn.benchmark = self.fix == CUDNN_BENCHMARK    # this process runs this variant only
        self.build()
        self.record.update(cudnn_benchmark=torch.backends.cudnn.benchmark,
                           cudnn_version=torch.backends.cudnn.version() if self.gpu else None)

    def build(self) -> None:
        raise NotImplementedError


@dataclass
class CudnnBenchR3D(_CudnnBenchmark):
    """torchvision's r3d_18 (3-D convolutions) eval forward in fp32 (cuDNN's TF32) at batch 8 x 16 frames x
    112^2: heuristics vs cudnn.benchmark."""
    kind: ClassVar[str] = "cudnn_bench_r3d"
    about: ClassVar[str] = ("torchvision video r3d_18 eval forward, fp32, batch 8 x 3 x 16 x 112 x 112, "
                            "inference_mode; cudnn_benchmark: torch.backends.cudnn.benchmark = True")
    batch: int = 8
    iters: int = 4

    def build(self):
        from torchvision.models.video import r3d_18

        b, f, s = (self.batch, 16, 112) if self.gpu else (1, 4, 32)
        torch.manual_seed(0)
        self.model = r3d_18(num_classes=400).to(self.device).eval()
        self.x = torch.randn(b, 3, f, s, s, device=self.device)

    @torch.inference_mode()
    def step(self):
        return self.model(self.x)


@dataclass
class CudnnBenchDeepLab(_CudnnBenchmark):
    """torchvision's deeplabv3_resnet50 (dilated convolutions, no pretrained weights) trained under autocast(bf16)
    at batch 4 x 512^2 with SGD: forward, data-grad and weight-grad plans, heuristics vs cudnn.benchmark."""
    kind: ClassVar[str] = "cudnn_bench_deeplab"
    about: ClassVar[str] = ("torchvision deeplabv3_resnet50 (weights=None) train step under autocast(bf16), batch 4 x "
                            "512^2, 21 classes, SGD; cudnn_benchmark: torch.backends.cudnn.benchmark = True")
    batch: int = 4
    iters: int = 2

    def build(self):
        from torchvision.models.segmentation import deeplabv3_resnet50

        b, s = (self.batch, 512) if self.gpu else (2, 64)
        torch.manual_seed(0)
        self.model = deeplabv3_resnet50(weights=None, weights_backbone=None, num_classes=21,
                                        aux_loss=False).to(self.device).train()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.x = torch.randn(b, 3, s, s, device=self.device)
        self.y = torch.randint(0, 21, (b, s, s), device=self.device)
        self.dev_type = torch.device(self.device).type

    def step(self):
        with torch.autocast(self.dev_type, dtype=torch.bfloat16, enabled=self.gpu):
            loss = F.cross_entropy(self.model(self.x)["out"], self.y)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()
        return loss


@dataclass
class CudnnBenchConvNeXt(_CudnnBenchmark):
    """torchvision's convnext_tiny (7x7 depthwise convolutions) eval forward in fp32 NCHW at batch 32, 224^2."""
    kind: ClassVar[str] = "cudnn_bench_convnext"
    about: ClassVar[str] = ("torchvision convnext_tiny eval forward, fp32 NCHW, batch 32, 224^2, inference_mode; "
                            "inference_mode; cudnn_benchmark: torch.backends.cudnn.benchmark = True")
    batch: int = 32
    iters: int = 4

    def build(self):
        from torchvision.models import convnext_tiny

        b, s = (self.batch, 224) if self.gpu else (1, 32)
        torch.manual_seed(0)
        self.model = convnext_tiny(num_classes=1000).to(self.device).eval()
        self.x = torch.randn(b, 3, s, s, device=self.device)

    @torch.inference_mode()
    def step(self):
        return self.model(self.x)


# --- inference_mode: an eval forward with autograd on -> torch.inference_mode() ---------------------------------

@dataclass
class _EvalWithGrad(RealWorkload):
    """model.eval() and a forward with autograd on, as a validation loop written without torch.no_grad(): every
    op records its backward node and keeps what it saves; inference_mode: the same forward inside
    torch.inference_mode()."""
    levers: ClassVar[tuple[str, ...]] = (INFERENCE_MODE,)

    def step(self):
        if self.fix == INFERENCE_MODE:
            with torch.inference_mode():
                return self.forward()
        return self.forward()

    def forward(self):
        raise NotImplementedError


@dataclass
class InferenceModeHFGPT2(_EvalWithGrad):
    """An HF GPT-2 (6 layers, 768) bf16 forward at batch 1 x 128 (host-bound: autograd's bookkeeping is host
    time in every op)."""
    kind: ClassVar[str] = "inference_mode_gpt2"
    needs: ClassVar[tuple[str, ...]] = ("transformers",)
    about: ClassVar[str] = ("HF GPT-2 from a config (6 layers, 768) bf16 model.eval() forward at batch 1 x 128 with "
                            "autograd on; inference_mode: the forward under torch.inference_mode()")
    seq: int = 128
    iters: int = 8

    def setup(self):
        self.model = _gpt2(6, 768, 12, self.device, self.gpu).eval()
        if self.gpu:
            self.model.to(torch.bfloat16)
        self.ids = torch.randint(0, self.model.config.vocab_size, (1, self.seq if self.gpu else 16),
                                 device=self.device)

    def forward(self):
        return self.model(self.ids).logits


@dataclass
class InferenceModeResnet(_EvalWithGrad):
    """torchvision resnet50 bf16 channels_last eval forward at batch 1, 224^2 (host-bound)."""
    kind: ClassVar[str] = "inference_mode_resnet"
    needs: ClassVar[tuple[str, ...]] = ("torchvision",)
    about: ClassVar[str] = ("torchvision resnet50 bf16 channels_last model.eval() forward at batch 1, 224^2 with "
                            "autograd on; inference_mode: the forward under torch.inference_mode()")
    iters: int = 8

    def setup(self):
        from torchvision.models import resnet50

        s = 224 if self.gpu else 32
        dt = torch.bfloat16 if self.gpu else torch.float32
        torch.manual_seed(0)
        self.model = resnet50(num_classes=1000).to(self.device, dt, memory_format=torch.channels_last).eval()
        self.x = torch.randn(1, 3, s, s, device=self.device, dtype=dt).to(memory_format=torch.channels_last)

    def forward(self):
        return self.model(self.x)


@dataclass
class InferenceModeEncoder(_EvalWithGrad):
    """nn.TransformerEncoder (6 layers, d 512, 8 heads) bf16 eval at batch 32 x 256: with autograd on it runs
    the Python path (separate attention and feed-forward ops); under inference_mode its fast path
    (aten::_transformer_encoder_layer_fwd, fused attention) runs."""
    kind: ClassVar[str] = "inference_mode_encoder"
    about: ClassVar[str] = ("nn.TransformerEncoder(6 x TransformerEncoderLayer(512, 8, batch_first)) bf16 model.eval() "
                            "forward at batch 32 x 256 with autograd on; inference_mode: the forward under "
                            "torch.inference_mode() (its fast path)")
    batch: int = 32
    seq: int = 256
    iters: int = 6

    def setup(self):
        b, s, d = (self.batch, self.seq, 512) if self.gpu else (2, 16, 32)
        dt = torch.bfloat16 if self.gpu else torch.float32
        torch.manual_seed(0)
        layer = nn.TransformerEncoderLayer(d, 8 if self.gpu else 4, dim_feedforward=4 * d, batch_first=True)
        self.model = nn.TransformerEncoder(layer, 6 if self.gpu else 2, enable_nested_tensor=False).to(
            self.device, dt).eval()
        self.x = torch.randn(b, s, d, device=self.device, dtype=dt)

    def forward(self):
        return self.model(self.x)


KNOB3_SCENARIOS = [SdpaGPTTrain, SdpaViTInfer, SdpaHFGPT2, CudnnBenchR3D, CudnnBenchDeepLab, CudnnBenchConvNeXt,
                   InferenceModeHFGPT2, InferenceModeResnet, InferenceModeEncoder]
