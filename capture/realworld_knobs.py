"""Ground truth for the knobs: one-line changes from PyTorch's tuning guides, each made in real-library code.

Two workloads a knob (one falls in the dev half, one in the test half by the name of its before trace):

    tf32               torch.backends.cuda.matmul.allow_tf32 = True (set_float32_matmul_precision("high"))
    autocast_bf16      torch.autocast("cuda", dtype=torch.bfloat16) around the forward
    channels_last      model and input .to(memory_format=torch.channels_last) for convolutions
    grads_to_none      zero_grad(set_to_none=True) in place of set_to_none=False
    tensors_on_device  torch.randn(..., device="cuda") in place of torch.randn(...).to("cuda")

A global flag (TF32) is set for the variant's own windows only and restored after each (the harness
interleaves the variants). Random weights, nothing downloads; torchvision is imported in setup().
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from tracetriage.analyzers.whatif.levers import AUTOCAST_BF16, CHANNELS_LAST, GRADS_TO_NONE, TENSORS_ON_DEVICE, TF32
from tracetriage.capture.realworld_common import RealWorkload
from tracetriage.capture.smells import narrow_mlp


def _mlp(width: int, depth: int, device: str) -> nn.Module:
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.GELU()]
    return nn.Sequential(*layers).to(device)


# --- TF32 ------------------------------------------------------------------------------------

@dataclass
class _TF32(RealWorkload):
    """fp32 matmuls with TF32 off (PyTorch's default for matmuls) or on for this variant's windows."""
    levers: ClassVar[tuple[str, ...]] = (TF32,)

    def window(self):
        was = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = self.fix == TF32
        try:
            super().window()
        finally:
            torch.backends.cuda.matmul.allow_tf32 = was


@dataclass
class TF32Gemm(_TF32):
    """x @ w in fp32 at 4096^3: 137 GFLOP a call, ~2.7 ms at the 51 TFLOP/s fp32 ceiling, ~0.33 ms in TF32."""
    kind: ClassVar[str] = "tf32_gemm"
    about: ClassVar[str] = "fp32 4096x4096 @ 4096x4096, 8 a window; tf32: allow_tf32=True"
    dim: int = 4096
    iters: int = 8

    def setup(self):
        d = self.dim if self.gpu else 128
        torch.manual_seed(0)
        self.a = torch.randn(d, d, device=self.device) / d ** 0.5
        self.b = torch.randn(d, d, device=self.device) / d ** 0.5
        self.record.update(flops_per_step=2 * d ** 3)

    def step(self):
        return self.a @ self.b


@dataclass
class TF32MLPTrain(_TF32):
    """fwd+bwd+SGD of 4 x (Linear(2048)+GELU) at batch 4096, fp32: ~410 GFLOP a step in 12 GEMMs."""
    kind: ClassVar[str] = "tf32_mlp_train"
    about: ClassVar[str] = "fp32 MLP 4x(Linear 2048 + GELU) fwd+bwd+SGD(foreach) at batch 4096; tf32: allow_tf32=True"
    width: int = 2048
    depth: int = 4
    batch: int = 4096
    iters: int = 3

    def setup(self):
        w, b = (self.width, self.batch) if self.gpu else (64, 32)
        torch.manual_seed(0)
        self.net = _mlp(w, self.depth, self.device).train()
        self.opt = torch.optim.SGD(self.net.parameters(), lr=1e-4, foreach=True)
        self.x = torch.randn(b, w, device=self.device)
        self.record.update(flops_per_step=3 * 2 * b * w * w * self.depth)

    def step(self):
        loss = self.net(self.x).square().mean()
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()
        return loss


# --- autocast -----------------------------------------------------------------------------------

@dataclass
class AutocastMLPTrain(RealWorkload):
    """fwd+bwd+AdamW(fused) of 3 x (Linear(3072)+GELU) at batch 2048, fp32 (TF32 off) vs the forward under
    torch.autocast(bfloat16): ~350 GFLOP a step."""
    kind: ClassVar[str] = "autocast_mlp_train"
    levers: ClassVar[tuple[str, ...]] = (AUTOCAST_BF16,)
    about: ClassVar[str] = ("fp32 MLP 3x(Linear 3072 + GELU) fwd+bwd+AdamW(fused) at batch 2048; autocast_bf16: "
                            "the forward and loss under torch.autocast('cuda', dtype=torch.bfloat16)")
    width: int = 3072
    depth: int = 3
    batch: int = 2048
    iters: int = 3

    def setup(self):
        w, b = (self.width, self.batch) if self.gpu else (64, 32)
        torch.manual_seed(0)
        self.net = _mlp(w, self.depth, self.device).train()
        self.opt = torch.optim.AdamW(self.net.parameters(), lr=1e-4, fused=self.gpu or None)
        self.x = torch.randn(b, w, device=self.device)
        self.dev_type = torch.device(self.device).type
        self.record.update(flops_per_step=3 * 2 * b * w * w * self.depth)

    def step(self):
        with torch.autocast(self.dev_type, dtype=torch.bfloat16, enabled=self.fix == AUTOCAST_BF16):
            loss = self.net(self.x).float().square().mean()
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()
        return loss


@dataclass
class AutocastResnetTrain(RealWorkload):
    """resnet18 fwd+bwd+SGD at batch 64, 224^2, channels_last, fp32 (cuDNN's convolutions in TF32, its default)
    vs under torch.autocast(bfloat16)."""
    kind: ClassVar[str] = "autocast_resnet_train"
    levers: ClassVar[tuple[str, ...]] = (AUTOCAST_BF16,)
    needs: ClassVar[tuple[str, ...]] = ("torchvision",)
    about: ClassVar[str] = ("resnet18 train step at batch 64, 224^2, channels_last, fp32; autocast_bf16: forward and "
                            "loss under torch.autocast('cuda', dtype=torch.bfloat16)")
    batch: int = 64
    side: int = 224
    iters: int = 3

    def setup(self):
        from torchvision.models import resnet18

        b, s = (self.batch, self.side) if self.gpu else (2, 32)
        torch.manual_seed(0)
        self.model = resnet18(num_classes=1000).to(self.device, memory_format=torch.channels_last).train()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.x = torch.randn(b, 3, s, s, device=self.device).to(memory_format=torch.channels_last)
        self.y = torch.randint(0, 1000, (b,), device=self.device)
        self.dev_type = torch.device(self.device).type

    def step(self):
        with torch.autocast(self.dev_type, dtype=torch.bfloat16, enabled=self.fix == AUTOCAST_BF16):
            loss = F.cross_entropy(self.model(self.x), self.y)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()
        return loss


# --- channels_last --------------------------------------------------------------------------------

@dataclass
class _ChannelsLastInference(RealWorkload):
    """A torchvision net's eval forward at `batch` x `side`^2 (bf16 on a GPU), NCHW (the default) against
    channels_last model and input; `net` names the torchvision.models constructor."""
    net: ClassVar[str] = ""
    needs: ClassVar[tuple[str, ...]] = ("torchvision",)
    levers: ClassVar[tuple[str, ...]] = (CHANNELS_LAST,)
    side: int = 224
    iters: int = 4

    def setup(self):
        import torchvision.models

        b, s = (self.batch, self.side) if self.gpu else (1, 32)
        dt = torch.bfloat16 if self.gpu else torch.float32
        fmt = torch.channels_last if self.fix == CHANNELS_LAST else torch.contiguous_format
        torch.manual_seed(0)
        self.model = getattr(torchvision.models, self.net)(num_classes=1000).to(self.device, dt,
                                                                                memory_format=fmt).eval()
        self.x = torch.randn(b, 3, s, s, device=self.device, dtype=dt).to(memory_format=fmt)

    @torch.inference_mode()
    def step(self):
        return self.model(self.x)


@dataclass
class ChannelsLastResnet50(_ChannelsLastInference):
    """resnet50 inference in bf16 at batch 32, 224^2: NCHW (the default) vs channels_last model and input."""
    kind: ClassVar[str] = "channels_last_resnet50"
    net: ClassVar[str] = "resnet50"
    about: ClassVar[str] = ("resnet50 eval forward in bf16 at batch 32, 224^2, NCHW; channels_last: model and input "
                            ".to(memory_format=torch.channels_last)")
    batch: int = 32


@dataclass
class ChannelsLastR18Train(RealWorkload):
    """resnet18 training under autocast(bf16) at batch 64, 224^2: NCHW vs channels_last model and input."""
    kind: ClassVar[str] = "channels_last_r18_train"
    levers: ClassVar[tuple[str, ...]] = (CHANNELS_LAST,)
    needs: ClassVar[tuple[str, ...]] = ("torchvision",)
    about: ClassVar[str] = ("resnet18 train step under autocast(bf16) at batch 64, 224^2, NCHW; channels_last: model "
                            "and input .to(memory_format=torch.channels_last)")
    batch: int = 64
    side: int = 224
    iters: int = 3

    def setup(self):
        from torchvision.models import resnet18

        b, s = (self.batch, self.side) if self.gpu else (2, 32)
        fmt = torch.channels_last if self.fix == CHANNELS_LAST else torch.contiguous_format
        torch.manual_seed(0)
        self.model = resnet18(num_classes=1000).to(self.device, memory_format=fmt).train()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.x = torch.randn(b, 3, s, s, device=self.device).to(memory_format=fmt)
        self.y = torch.randint(0, 1000, (b,), device=self.device)
        self.dev_type = torch.device(self.device).type

    def step(self):
        with torch.autocast(self.dev_type, dtype=torch.bfloat16, enabled=self.gpu):
            loss = F.cross_entropy(self.model(self.x), self.y)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()
        return loss


# --- zero_grad(set_to_none=True) ---------------------------------------------------------------------

@dataclass
class _GradsToNone(RealWorkload):
    """A narrow MLP trained with zero_grad(set_to_none=False): every step fills each grad with zeros and the
    next backward accumulates into it (an add per parameter); grads_to_none: set_to_none=True."""
    levers: ClassVar[tuple[str, ...]] = (GRADS_TO_NONE,)
    blocks: int = 16
    width: int = 256
    batch: int = 32
    iters: int = 2

    def setup(self):
        blocks, width, batch = (self.blocks, self.width, self.batch) if self.gpu else (4, 32, 4)
        torch.manual_seed(0)
        self.net = narrow_mlp(blocks, width, self.device).train()
        self.x = torch.randn(batch, width, device=self.device)
        self.opt = self.optimizer(list(self.net.parameters()))
        self.record.update(param_tensors=len(list(self.net.parameters())))

    def optimizer(self, params):
        raise NotImplementedError

    def step(self):
        loss = self.net(self.x).square().mean()
        loss.backward()
        self.opt.step()
        self.zero_grad(set_to_none=self.fix == GRADS_TO_NONE)
        return loss

    def zero_grad(self, set_to_none: bool) -> None:
        raise NotImplementedError


@dataclass
class GradsToNoneWide(_GradsToNone):
    kind: ClassVar[str] = "set_to_none_wide"
    about: ClassVar[str] = ("fwd+bwd of 16 Linear(2048)+LayerNorm blocks at batch 512, AdamW(fused), "
                            "optimizer.zero_grad(set_to_none=False); grads_to_none: set_to_none=True")
    blocks: int = 16
    width: int = 2048
    batch: int = 512

    def optimizer(self, params):
        return torch.optim.AdamW(params, lr=1e-4, fused=self.gpu or None)

    def zero_grad(self, set_to_none: bool) -> None:
        self.opt.zero_grad(set_to_none=set_to_none)


@dataclass
class GradsToNoneSmall(_GradsToNone):
    kind: ClassVar[str] = "set_to_none_small"
    about: ClassVar[str] = ("fwd+bwd of 96 Linear(256)+LayerNorm blocks (384 param tensors) at batch 32, "
                            "SGD(foreach), model.zero_grad(set_to_none=False); grads_to_none: set_to_none=True")
    blocks: int = 96
    width: int = 256
    batch: int = 32

    def optimizer(self, params):
        return torch.optim.SGD(params, lr=1e-3, foreach=True)

    def zero_grad(self, set_to_none: bool) -> None:
        self.net.zero_grad(set_to_none=set_to_none)    # nn.Module's: one fill per parameter


# --- tensors made on the device -----------------------------------------------------------------------

@dataclass
class DeviceRandn(RealWorkload):
    """Noise added to activations each step: torch.randn(2048, 2048).to('cuda') (made on the host, 16 MiB
    copied from pageable memory) vs torch.randn(..., device='cuda')."""
    kind: ClassVar[str] = "device_randn"
    levers: ClassVar[tuple[str, ...]] = (TENSORS_ON_DEVICE,)
    about: ClassVar[str] = ("y = (x @ w).relu() + torch.randn(2048, 2048).to(device), fp32 2048^2, 4 a window; "
                            "tensors_on_device: torch.randn(..., device=device)")
    dim: int = 2048
    iters: int = 4

    def setup(self):
        d = self.dim if self.gpu else 64
        torch.manual_seed(0)
        self.d = d
        self.x = torch.randn(d, d, device=self.device)
        self.w = torch.randn(d, d, device=self.device) / d ** 0.5

    def step(self):
        if self.fix == TENSORS_ON_DEVICE:
            noise = torch.randn(self.d, self.d, device=self.device)
        else:
            noise = torch.randn(self.d, self.d).to(self.device)
        return (self.x @ self.w).relu() + 0.01 * noise


@dataclass
class DeviceMasks(RealWorkload):
    """A TransformerEncoderLayer (d 512, 8 heads) at batch 8 x 256 tokens fed position ids and a causal mask
    made each step on the host and copied (torch.arange(...).cuda(), torch.triu(torch.full(...)).cuda()) vs made
    on the device."""
    kind: ClassVar[str] = "device_masks"
    levers: ClassVar[tuple[str, ...]] = (TENSORS_ON_DEVICE,)
    about: ClassVar[str] = ("nn.TransformerEncoderLayer(512, 8) eval at batch 8 x 256 + nn.Embedding positions, "
                            "position ids and a causal float mask made on the host each step and .cuda()'d; "
                            "tensors_on_device: made with device=")
    batch: int = 8
    seq: int = 256
    dim: int = 512
    iters: int = 8

    def setup(self):
        b, s, d = (self.batch, self.seq, self.dim) if self.gpu else (2, 16, 32)
        self.b, self.s = b, s
        torch.manual_seed(0)
        self.layer = nn.TransformerEncoderLayer(d, 8 if self.gpu else 4, dim_feedforward=4 * d,
                                                batch_first=True).to(self.device).eval()
        self.pos = nn.Embedding(s, d).to(self.device)
        self.x = torch.randn(b, s, d, device=self.device)

    @torch.inference_mode()
    def step(self):
        on = self.device if self.fix == TENSORS_ON_DEVICE else "cpu"
        ids = torch.arange(self.s, device=on).unsqueeze(0).expand(self.b, -1)
        mask = torch.triu(torch.full((self.s, self.s), float("-inf"), device=on), diagonal=1)
        if self.fix != TENSORS_ON_DEVICE:
            ids, mask = ids.to(self.device), mask.to(self.device)
        return self.layer(self.x + self.pos(ids), src_mask=mask)


# --- the third workload of each knob: real-library models ------------------------------------------------------

def _gpt2(layers: int, width: int, heads: int, device: str, gpu: bool) -> nn.Module:
    """An HF GPT-2 built from a config, random weights (nothing downloads); tiny on the CPU."""
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(n_layer=layers if gpu else 1, n_embd=width if gpu else 64, n_head=heads if gpu else 2,
                     vocab_size=50257 if gpu else 512, n_positions=1024)
    torch.manual_seed(0)
    return GPT2LMHeadModel(cfg).to(device)


@dataclass
class TF32GPT2Infer(_TF32):
    """An HF GPT-2 (6 layers, 768 wide) forward in fp32 at batch 8 x 256 tokens, TF32 off vs on."""
    kind: ClassVar[str] = "tf32_gpt2_infer"
    needs: ClassVar[tuple[str, ...]] = ("transformers",)
    about: ClassVar[str] = ("HF GPT-2 from a config (6 layers, 768, random weights) eval forward, fp32, batch 8 x 256; "
                            "tf32: allow_tf32=True")
    batch: int = 8
    seq: int = 256
    iters: int = 4

    def setup(self):
        self.model = _gpt2(6, 768, 12, self.device, self.gpu).eval()
        b, s = (self.batch, self.seq) if self.gpu else (1, 16)
        self.ids = torch.randint(0, self.model.config.vocab_size, (b, s), device=self.device)

    @torch.inference_mode()
    def step(self):
        return self.model(self.ids).logits


@dataclass
class AutocastGPT2Train(RealWorkload):
    """An HF GPT-2 (4 layers, 768 wide) trained in fp32 at batch 8 x 256 with AdamW(fused) vs the forward under
    torch.autocast(bfloat16)."""
    kind: ClassVar[str] = "autocast_gpt2_train"
    levers: ClassVar[tuple[str, ...]] = (AUTOCAST_BF16,)
    needs: ClassVar[tuple[str, ...]] = ("transformers",)
    about: ClassVar[str] = ("HF GPT-2 from a config (4 layers, 768) train step in fp32 at batch 8 x 256, AdamW(fused); "
                            "autocast_bf16: forward and loss under torch.autocast('cuda', dtype=torch.bfloat16)")
    batch: int = 8
    seq: int = 256
    iters: int = 3

    def setup(self):
        self.model = _gpt2(4, 768, 12, self.device, self.gpu).train()
        b, s = (self.batch, self.seq) if self.gpu else (1, 16)
        self.ids = torch.randint(0, self.model.config.vocab_size, (b, s), device=self.device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4, fused=self.gpu or None)
        self.dev_type = torch.device(self.device).type

    def step(self):
        with torch.autocast(self.dev_type, dtype=torch.bfloat16, enabled=self.fix == AUTOCAST_BF16):
            loss = self.model(self.ids, labels=self.ids).loss
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()
        return loss


@dataclass
class ChannelsLastMobileNet(_ChannelsLastInference):
    """torchvision mobilenet_v2 inference in bf16 at batch 64, 224^2: NCHW vs channels_last."""
    kind: ClassVar[str] = "channels_last_mobilenet"
    net: ClassVar[str] = "mobilenet_v2"
    about: ClassVar[str] = ("mobilenet_v2 eval forward in bf16 at batch 64, 224^2, NCHW; channels_last: model and "
                            "input .to(memory_format=torch.channels_last)")
    batch: int = 64


@dataclass
class GradsToNoneGPT2(RealWorkload):
    """An HF GPT-2 (4 layers, 512 wide) trained at batch 4 x 128 with AdamW(foreach) and
    optimizer.zero_grad(set_to_none=False) vs set_to_none=True."""
    kind: ClassVar[str] = "set_to_none_gpt2"
    levers: ClassVar[tuple[str, ...]] = (GRADS_TO_NONE,)
    needs: ClassVar[tuple[str, ...]] = ("transformers",)
    about: ClassVar[str] = ("HF GPT-2 from a config (4 layers, 512) train step at batch 4 x 128, AdamW(foreach=True), "
                            "optimizer.zero_grad(set_to_none=False); grads_to_none: set_to_none=True")
    batch: int = 4
    seq: int = 128
    iters: int = 3

    def setup(self):
        self.model = _gpt2(4, 512, 8, self.device, self.gpu).train()
        b, s = (self.batch, self.seq) if self.gpu else (1, 16)
        self.ids = torch.randint(0, self.model.config.vocab_size, (b, s), device=self.device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4, foreach=True)

    def step(self):
        loss = self.model(self.ids, labels=self.ids).loss
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=self.fix == GRADS_TO_NONE)
        return loss


@dataclass
class DeviceLabels(RealWorkload):
    """A classifier head's step fed labels, per-sample weights and a dropout-style mask made on the host each
    step (torch.randint / torch.ones / torch.rand, then .to('cuda')) vs made on the device."""
    kind: ClassVar[str] = "device_labels"
    levers: ClassVar[tuple[str, ...]] = (TENSORS_ON_DEVICE,)
    about: ClassVar[str] = ("Linear(1024, 1000) + weighted cross-entropy at batch 4096, labels/weights/mask made on "
                            "the host (randint, ones, rand 4096x1024) and .to(device) each step; tensors_on_device: "
                            "made with device=")
    batch: int = 4096
    width: int = 1024
    iters: int = 6

    def setup(self):
        b, w = (self.batch, self.width) if self.gpu else (32, 64)
        self.b, self.w = b, w
        torch.manual_seed(0)
        self.head = nn.Linear(w, 1000).to(self.device)
        self.x = torch.randn(b, w, device=self.device)

    def step(self):
        on = self.device if self.fix == TENSORS_ON_DEVICE else "cpu"
        labels = torch.randint(0, 1000, (self.b,), device=on)
        weights = torch.ones(self.b, device=on)
        keep = torch.rand(self.b, self.w, device=on)
        if self.fix != TENSORS_ON_DEVICE:
            labels, weights, keep = labels.to(self.device), weights.to(self.device), keep.to(self.device)
        loss = (F.cross_entropy(self.head(self.x * (keep > 0.1)), labels, reduction="none") * weights).mean()
        loss.backward()
        return loss


KNOB_SCENARIOS = [TF32Gemm, TF32MLPTrain, AutocastMLPTrain, AutocastResnetTrain, ChannelsLastResnet50,
                  ChannelsLastR18Train, GradsToNoneWide, GradsToNoneSmall, DeviceRandn, DeviceMasks,
                  TF32GPT2Infer, AutocastGPT2Train, ChannelsLastMobileNet, GradsToNoneGPT2, DeviceLabels]
