"""Ground truth for three knobs whose levers were written from development traces alone (one before/after pair
each): three real-library workloads a knob, each variant timed five times profiled and unprofiled.

    drop_float64      float32 in place of float64: an MLP trained from numpy's float64 arrays (.double()), a
                      finite-difference heat equation stepped in float64 (torch.set_default_dtype's habit), a
                      Fourier neural operator's spectral layer on complex128 FFTs
    convert_on_gpu    the narrow tensor copied and converted on the GPU (x.to(device).float().div_(255)) in place of
                      converting on the host and copying the wide one: uint8 images into a ResNet, int16 audio into
                      a 1-D conv encoder, fp16-stored features into an MLP
    no_checkpointing  activation checkpointing off: a transformer encoder with torch.utils.checkpoint around each
                      layer, HF GPT-2 with gradient_checkpointing_enable(), a conv stack under checkpoint_sequential

Random weights, nothing downloads; torchvision and transformers are imported in setup(). Tiny shapes on the CPU.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

from tracetriage.analyzers.whatif.levers import CONVERT_ON_GPU, DROP_FLOAT64, NO_CHECKPOINTING
from tracetriage.capture.realworld_common import RealWorkload

# --- drop_float64: float64 -> float32 ---------------------------------------------------------------------------


@dataclass
class Float64MLPTrain(RealWorkload):
    """An MLP (4 x Linear 2048 + Tanh) trained with Adam on inputs made by numpy (float64), the model .double()'d to
    match them: fp64 GEMMs and elementwise kernels."""
    kind: ClassVar[str] = "float64_mlp_train"
    levers: ClassVar[tuple[str, ...]] = (DROP_FLOAT64,)
    about: ClassVar[str] = ("MLP 4 x (Linear 2048 + Tanh) + Linear 1, Adam, batch 8192 of numpy float64 features, "
                            "model.double(); drop_float64: .float() model and inputs")
    batch: int = 8192
    iters: int = 4

    def setup(self):
        b, d = (self.batch, 2048) if self.gpu else (32, 16)
        dt = torch.float32 if self.fix == DROP_FLOAT64 else torch.float64
        torch.manual_seed(0)
        layers: list[nn.Module] = []
        for _ in range(4):
            layers += [nn.Linear(d, d), nn.Tanh()]
        self.net = nn.Sequential(*layers, nn.Linear(d, 1)).to(self.device, dt)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=1e-4)
        rng = np.random.default_rng(0)
        self.x = torch.from_numpy(rng.standard_normal((b, d))).to(self.device, dt)      # numpy's float64
        self.y = torch.from_numpy(rng.standard_normal(b)).to(self.device, dt)

    def step(self):
        loss = (self.net(self.x).squeeze(1) - self.y).square().mean()
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return loss


@dataclass
class Float64HeatStencil(RealWorkload):
    """A 2-D heat equation on a 4096^2 periodic grid, 20 explicit finite-difference steps an iteration (torch.roll
    and arithmetic: memory-bound elementwise kernels), in float64 as a simulation code's default dtype."""
    kind: ClassVar[str] = "float64_heat_stencil"
    levers: ClassVar[tuple[str, ...]] = (DROP_FLOAT64,)
    about: ClassVar[str] = ("2-D heat equation, 4096^2 periodic grid, 20 explicit steps of u += a * laplacian(u) "
                            "(torch.roll) an iteration, float64; drop_float64: float32")
    n: int = 4096
    substeps: int = 20
    iters: int = 3

    def setup(self):
        n = self.n if self.gpu else 64
        dt = torch.float32 if self.fix == DROP_FLOAT64 else torch.float64
        torch.manual_seed(0)
        self.u = torch.rand(n, n, device=self.device, dtype=dt)

    def step(self):
        u = self.u
        for _ in range(self.substeps):
            lap = (u.roll(1, 0) + u.roll(-1, 0) + u.roll(1, 1) + u.roll(-1, 1)) - 4 * u
            u = u + 0.1 * lap
        self.u = u
        return u


class _SpectralConv2d(nn.Module):
    """A Fourier neural operator's spectral layer: rfft2, the lowest modes multiplied by complex weights, irfft2."""

    def __init__(self, ch: int, modes: int, dtype: torch.dtype):
        super().__init__()
        cdt = torch.complex128 if dtype == torch.float64 else torch.complex64
        self.modes = modes
        self.w = nn.Parameter(torch.randn(ch, ch, modes, modes, dtype=cdt) / ch)

    def forward(self, x):
        f = torch.fft.rfft2(x)
        out = torch.zeros_like(f)
        m = self.modes
        out[:, :, :m, :m] = torch.einsum("bixy,ioxy->boxy", f[:, :, :m, :m], self.w)
        return torch.fft.irfft2(out, s=x.shape[-2:])


@dataclass
class Float64FNOTrain(RealWorkload):
    """A 4-layer Fourier neural operator (64 channels, 16 modes) trained at batch 16 on 256^2 fields in float64:
    complex128 FFTs, fp64 einsums and 1x1 convolutions."""
    kind: ClassVar[str] = "float64_fno_train"
    levers: ClassVar[tuple[str, ...]] = (DROP_FLOAT64,)
    about: ClassVar[str] = ("FNO 4 x (spectral conv 64 ch, 16 modes + 1x1 conv + GELU), Adam, batch 16 x 256^2, "
                            "float64 (complex128 FFTs); drop_float64: float32 (complex64)")
    batch: int = 16
    iters: int = 3

    def setup(self):
        b, ch, n, modes = (self.batch, 64, 256, 16) if self.gpu else (2, 8, 16, 4)
        dt = torch.float32 if self.fix == DROP_FLOAT64 else torch.float64
        torch.manual_seed(0)
        self.spec = nn.ModuleList([_SpectralConv2d(ch, modes, dt) for _ in range(4)]).to(self.device)
        self.pw = nn.ModuleList([nn.Conv2d(ch, ch, 1) for _ in range(4)]).to(self.device, dt)
        self.lift, self.proj = nn.Conv2d(1, ch, 1).to(self.device, dt), nn.Conv2d(ch, 1, 1).to(self.device, dt)
        params = [*self.spec.parameters(), *self.pw.parameters(), *self.lift.parameters(), *self.proj.parameters()]
        self.opt = torch.optim.Adam(params, lr=1e-4)
        self.x = torch.randn(b, 1, n, n, device=self.device, dtype=dt)
        self.y = torch.randn(b, 1, n, n, device=self.device, dtype=dt)

    def step(self):
        h = self.lift(self.x)
        for s, p in zip(self.spec, self.pw):
            h = F.gelu(s(h) + p(h))
        loss = (self.proj(h) - self.y).square().mean()
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return loss


# --- convert_on_gpu: host conversion + wide copy -> narrow copy + GPU conversion -------------------------------


@dataclass
class _ConvertThenCopy(RealWorkload):
    """A batch kept on the host in a narrow type (`narrow`), widened to fp32 and scaled before or after its copy to
    the device (pageable, as a tensor made by a decoder or numpy is), then a model's eval forward."""
    levers: ClassVar[tuple[str, ...]] = (CONVERT_ON_GPU,)
    scale: ClassVar[float] = 1.0

    def build(self) -> tuple[nn.Module, torch.Tensor]:
        raise NotImplementedError

    def setup(self):
        torch.manual_seed(0)
        self.model, self.host = self.build()
        self.model = self.model.to(self.device).eval()

    def batch(self) -> torch.Tensor:
        if self.fix == CONVERT_ON_GPU:
            x = self.host.to(self.device).float()
        else:
            x = self.host.float()
            if self.scale != 1.0:
                x = x.div_(self.scale)
            return x.to(self.device)
        return x.div_(self.scale) if self.scale != 1.0 else x

    @torch.inference_mode()
    def step(self):
        return self.model(self.batch())


@dataclass
class ConvertImagesResnet(_ConvertThenCopy):
    """uint8 images (256 x 3 x 224 x 224: 38.5 MB) widened to fp32 and divided by 255 on the host (154 MB copied)
    before a torchvision ResNet-18 eval forward with channels_last under bf16 autocast."""
    kind: ClassVar[str] = "convert_images_resnet"
    needs: ClassVar[tuple[str, ...]] = ("torchvision",)
    about: ClassVar[str] = ("uint8 images 256 x 3 x 224^2 -> x.float().div_(255).to(device) -> resnet18 eval forward "
                            "(bf16 autocast); convert_on_gpu: x.to(device).float().div_(255)")
    scale: ClassVar[float] = 255.0
    iters: int = 3

    def build(self):
        from torchvision.models import resnet18

        b, s = (256, 224) if self.gpu else (2, 32)
        return resnet18(num_classes=1000), torch.randint(0, 256, (b, 3, s, s), dtype=torch.uint8)

    @torch.inference_mode()
    def step(self):
        with torch.autocast(torch.device(self.device).type, dtype=torch.bfloat16, enabled=self.gpu):
            return self.model(self.batch())


class _AudioEncoder(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.front = nn.Sequential(nn.Conv1d(1, d, 10, stride=5), nn.GELU(), nn.Conv1d(d, d, 8, stride=4), nn.GELU(),
                                   nn.Conv1d(d, d, 4, stride=2), nn.GELU())
        self.head = nn.Linear(d, 32)

    def forward(self, wav):
        return self.head(self.front(wav.unsqueeze(1)).mean(-1))


@dataclass
class ConvertAudioEncoder(_ConvertThenCopy):
    """int16 PCM (64 clips x 10 s at 16 kHz: 20.5 MB) widened to fp32 and divided by 32768 on the host (41 MB copied)
    before a wav2vec-style strided conv front end."""
    kind: ClassVar[str] = "convert_audio_encoder"
    about: ClassVar[str] = ("int16 PCM 64 x 160000 -> x.float().div_(32768).to(device) -> strided Conv1d encoder "
                            "(256 ch) eval forward; convert_on_gpu: x.to(device).float().div_(32768)")
    scale: ClassVar[float] = 32768.0
    iters: int = 4

    def build(self):
        b, t, d = (64, 160_000, 256) if self.gpu else (2, 4000, 16)
        return _AudioEncoder(d), torch.randint(-32768, 32767, (b, t), dtype=torch.int16)


@dataclass
class ConvertHalfFeaturesMLP(_ConvertThenCopy):
    """Features stored in fp16 on the host to halve their memory (32768 x 1024: 64 MB), widened to fp32 there
    (128 MB copied) before an MLP scoring them."""
    kind: ClassVar[str] = "convert_half_features_mlp"
    about: ClassVar[str] = ("fp16 features 32768 x 1024 on the host -> x.float().to(device) -> MLP 1024-2048-2048-1 "
                            "eval forward; convert_on_gpu: x.to(device).float()")
    iters: int = 4

    def build(self):
        b, d = (32768, 1024) if self.gpu else (64, 16)
        net = nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Linear(2 * d, 2 * d), nn.ReLU(), nn.Linear(2 * d, 1))
        return net, torch.randn(b, d).half()


# --- no_checkpointing: activation checkpointing -> activations kept ---------------------------------------------


@dataclass
class CheckpointedEncoderTrain(RealWorkload):
    """nn.TransformerEncoderLayer x 8 (d 1024, 16 heads) trained at batch 16 x 512 under bf16 autocast, each layer
    wrapped in torch.utils.checkpoint.checkpoint(use_reentrant=False): the backward reruns every layer's forward."""
    kind: ClassVar[str] = "checkpoint_encoder_train"
    levers: ClassVar[tuple[str, ...]] = (NO_CHECKPOINTING,)
    about: ClassVar[str] = ("8 x TransformerEncoderLayer(1024, 16 heads, batch_first) train step, batch 16 x 512, bf16 "
                            "autocast, AdamW(fused), checkpoint(layer, x, use_reentrant=False) per layer; "
                            "no_checkpointing: layer(x)")
    batch: int = 16
    seq: int = 512
    iters: int = 3

    def setup(self):
        b, s, d, h, n = (self.batch, self.seq, 1024, 16, 8) if self.gpu else (2, 16, 32, 4, 2)
        torch.manual_seed(0)
        self.layers = nn.ModuleList([nn.TransformerEncoderLayer(d, h, 4 * d, batch_first=True, dropout=0.0)
                                     for _ in range(n)]).to(self.device).train()
        self.opt = torch.optim.AdamW(self.layers.parameters(), lr=1e-4, fused=self.gpu or None)
        self.x = torch.randn(b, s, d, device=self.device)
        self.dev_type = torch.device(self.device).type

    def step(self):
        with torch.autocast(self.dev_type, dtype=torch.bfloat16, enabled=self.gpu):
            h = self.x
            for layer in self.layers:
                h = layer(h) if self.fix == NO_CHECKPOINTING else checkpoint(layer, h, use_reentrant=False)
            loss = h.float().square().mean()
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return loss


@dataclass
class CheckpointedGPT2Train(RealWorkload):
    """An HF GPT-2 (8 layers, 1024 wide, 16 heads; random weights from a config) trained at batch 8 x 1024 under
    bf16 autocast with model.gradient_checkpointing_enable()."""
    kind: ClassVar[str] = "checkpoint_gpt2_train"
    levers: ClassVar[tuple[str, ...]] = (NO_CHECKPOINTING,)
    needs: ClassVar[tuple[str, ...]] = ("transformers",)
    about: ClassVar[str] = ("HF GPT-2 from a config (8 layers, 1024, 16 heads) train step at batch 8 x 1024, bf16 "
                            "autocast, AdamW(fused), gradient_checkpointing_enable(); no_checkpointing: not enabled")
    batch: int = 8
    seq: int = 1024
    iters: int = 3

    def setup(self):
        from transformers import AutoModelForCausalLM, GPT2Config

        layers, width, heads, vocab = (8, 1024, 16, 50257) if self.gpu else (1, 64, 2, 512)
        cfg = GPT2Config(n_layer=layers, n_embd=width, n_head=heads, vocab_size=vocab, n_positions=1024,
                         resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        torch.manual_seed(0)
        self.model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa").to(self.device).train()
        if self.fix != NO_CHECKPOINTING:
            self.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        self.record.update(gradient_checkpointing=self.model.is_gradient_checkpointing)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4, fused=self.gpu or None)
        b, s = (self.batch, self.seq) if self.gpu else (1, 16)
        self.ids = torch.randint(0, vocab, (b, s), device=self.device)
        self.dev_type = torch.device(self.device).type

    def step(self):
        with torch.autocast(self.dev_type, dtype=torch.bfloat16, enabled=self.gpu):
            loss = self.model(self.ids, labels=self.ids).loss
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return loss


def _conv_block(ch: int) -> nn.Module:
    return nn.Sequential(nn.Conv2d(ch, ch, 3, padding=1, bias=False), nn.BatchNorm2d(ch), nn.ReLU(inplace=True),
                         nn.Conv2d(ch, ch, 3, padding=1, bias=False), nn.BatchNorm2d(ch), nn.ReLU(inplace=True))


@dataclass
class CheckpointedConvStackTrain(RealWorkload):
    """12 residual-free conv blocks (128 channels, 3x3 conv + BN + ReLU twice) trained at batch 64 x 112^2 in bf16
    autocast, channels_last, through torch.utils.checkpoint.checkpoint_sequential(blocks, 4 segments)."""
    kind: ClassVar[str] = "checkpoint_convstack_train"
    levers: ClassVar[tuple[str, ...]] = (NO_CHECKPOINTING,)
    about: ClassVar[str] = ("12 conv blocks (128 ch, 2 x (3x3 conv + BN + ReLU)), batch 64 x 112^2, bf16 autocast, "
                            "channels_last, SGD, checkpoint_sequential(blocks, 4, x, use_reentrant=False); "
                            "no_checkpointing: blocks(x)")
    batch: int = 64
    iters: int = 3

    def setup(self):
        b, ch, s, n = (self.batch, 128, 112, 12) if self.gpu else (2, 8, 16, 4)
        torch.manual_seed(0)
        self.blocks = nn.Sequential(*[_conv_block(ch) for _ in range(n)]).to(self.device).train()
        self.x = torch.randn(b, ch, s, s, device=self.device)
        if self.gpu:
            self.blocks = self.blocks.to(memory_format=torch.channels_last)
            self.x = self.x.to(memory_format=torch.channels_last)
        self.opt = torch.optim.SGD(self.blocks.parameters(), lr=1e-3, momentum=0.9)
        self.dev_type = torch.device(self.device).type

    def step(self):
        with torch.autocast(self.dev_type, dtype=torch.bfloat16, enabled=self.gpu):
            if self.fix == NO_CHECKPOINTING:
                h = self.blocks(self.x)
            else:
                h = checkpoint_sequential(self.blocks, 4, self.x, use_reentrant=False)
            loss = h.float().square().mean()
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return loss


KNOB4_SCENARIOS = [Float64MLPTrain, Float64HeatStencil, Float64FNOTrain, ConvertImagesResnet, ConvertAudioEncoder,
                   ConvertHalfFeaturesMLP, CheckpointedEncoderTrain, CheckpointedGPT2Train,
                   CheckpointedConvStackTrain]
