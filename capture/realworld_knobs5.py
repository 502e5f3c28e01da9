"""Ground truth for four knobs first seen on one development pair each (fresh8's workloads): real-library workloads
a knob, each variant timed five times profiled and unprofiled, none of them the workload a lever was written from.

    validate_args       torch.distributions' argument checks off (Distribution.set_default_validate_args(False)):
                        a VAE trained through Normal/Independent, a Beta policy's log-probabilities, a mixture density
                        network's MixtureSameFamily log-likelihood
    cross_entropy       F.cross_entropy in place of a hand-written one-hot loss: a label-smoothed language-model loss
                        over a 32k vocabulary, a pixel-wise segmentation loss over 21 classes
    embedding_max_norm  embeddings without max_norm (no embedding_renorm_ each forward): a skip-gram model's two
                        tables, an EmbeddingBag recommender
    module_round_trip   a module kept on the GPU in place of moved to the CPU and back each request: a VAE decoder
                        after a denoiser, a reranker's encoder beside a retriever's

Random weights, nothing downloads; plain torch. Tiny shapes on the CPU.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import Beta, Categorical, Distribution, Independent, MixtureSameFamily, Normal

from tracetriage.analyzers.whatif.levers import CROSS_ENTROPY, EMBEDDING_MAX_NORM, MODULE_ROUND_TRIP, VALIDATE_ARGS
from tracetriage.capture.realworld_common import RealWorkload

# --- validate_args: torch.distributions' checks (a host sync per checked argument) off -----------------------


@dataclass
class _Validated(RealWorkload):
    """Distributions built each step with PyTorch's default argument validation (on unless python -O): every
    constructor and log_prob checks its arguments' support with a reduction read on the host."""
    levers: ClassVar[tuple[str, ...]] = (VALIDATE_ARGS,)

    def setup(self):
        # the default is global: set it for both variants, as the user's one line would
        Distribution.set_default_validate_args(self.fix != VALIDATE_ARGS)
        torch.manual_seed(0)
        self.build()

    def build(self) -> None:
        raise NotImplementedError


@dataclass
class ValidatedVAETrain(_Validated):
    """A VAE (MLP encoder/decoder, 784 -> 512 -> 32) trained at batch 256: q(z|x) = Independent(Normal(mu, std), 1),
    rsample, log_prob under q and the prior, a Bernoulli-style reconstruction loss."""
    kind: ClassVar[str] = "validate_vae_train"
    about: ClassVar[str] = ("VAE 784-512-32 MLP, batch 256, Independent(Normal) rsample + log_prob (q and prior), "
                            "Adam; validate_args: Distribution.set_default_validate_args(False)")
    batch: int = 256
    iters: int = 6

    def build(self):
        b, d, h, z = (self.batch, 784, 512, 32) if self.gpu else (4, 16, 8, 4)
        self.enc = nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, 2 * z)).to(self.device)
        self.dec = nn.Sequential(nn.Linear(z, h), nn.ReLU(), nn.Linear(h, d)).to(self.device)
        self.opt = torch.optim.Adam([*self.enc.parameters(), *self.dec.parameters()], lr=1e-3)
        self.x = torch.rand(b, d, device=self.device)
        self.z = z

    def step(self):
        mu, log_std = self.enc(self.x).chunk(2, dim=-1)
        q = Independent(Normal(mu, log_std.exp()), 1)
        z = q.rsample()
        prior = Independent(Normal(torch.zeros_like(mu), torch.ones_like(mu)), 1)
        recon = F.binary_cross_entropy_with_logits(self.dec(z), self.x, reduction="none").sum(-1)
        loss = (recon + q.log_prob(z) - prior.log_prob(z)).mean()
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return loss


@dataclass
class ValidatedBetaPolicy(_Validated):
    """A continuous-control actor-critic update: a Beta policy over 6 action dimensions for 1024 states, the
    actions' log-probabilities and entropy, 8 minibatch updates a step (PPO's inner loop)."""
    kind: ClassVar[str] = "validate_beta_policy"
    about: ClassVar[str] = ("actor-critic MLP 64-256-256, Beta(alpha, beta) over 6 actions, 1024 states, 8 "
                            "minibatch updates of log_prob + entropy; validate_args: "
                            "Distribution.set_default_validate_args(False)")
    batch: int = 1024
    iters: int = 3

    def build(self):
        b, d, h, a = (self.batch, 64, 256, 6) if self.gpu else (8, 8, 8, 2)
        self.actor = nn.Sequential(nn.Linear(d, h), nn.Tanh(), nn.Linear(h, h), nn.Tanh(), nn.Linear(h, 2 * a))
        self.actor = self.actor.to(self.device)
        self.opt = torch.optim.Adam(self.actor.parameters(), lr=3e-4)
        self.s = torch.randn(b, d, device=self.device)
        self.act = torch.rand(b, a, device=self.device).clamp(0.01, 0.99)
        self.adv = torch.randn(b, device=self.device)

    def step(self):
        loss = None
        for s, act, adv in zip(self.s.chunk(8), self.act.chunk(8), self.adv.chunk(8)):
            conc = F.softplus(self.actor(s)) + 1.0
            alpha, beta = conc.chunk(2, dim=-1)
            pi = Beta(alpha, beta)
            loss = -(pi.log_prob(act).sum(-1) * adv).mean() - 0.01 * pi.entropy().sum(-1).mean()
            loss.backward()
            self.opt.step()
            self.opt.zero_grad(set_to_none=True)
        return loss


@dataclass
class ValidatedMixtureDensity(_Validated):
    """A mixture density network (MLP -> 16 Gaussian components over 2-D targets) trained at batch 4096 on the
    negative log-likelihood of MixtureSameFamily(Categorical, Independent(Normal))."""
    kind: ClassVar[str] = "validate_mdn_train"
    about: ClassVar[str] = ("MDN MLP 32-512-512 -> 16 components x 2-D Gaussians, batch 4096, MixtureSameFamily "
                            "log_prob, Adam; validate_args: Distribution.set_default_validate_args(False)")
    batch: int = 4096
    iters: int = 6

    def build(self):
        b, d, h, k = (self.batch, 32, 512, 16) if self.gpu else (8, 4, 8, 2)
        self.net = nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, k * 5))
        self.net = self.net.to(self.device)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=1e-3)
        self.x = torch.randn(b, d, device=self.device)
        self.y = torch.randn(b, 2, device=self.device)
        self.k = k

    def step(self):
        out = self.net(self.x)
        logits, mu, log_std = out[:, :self.k], out[:, self.k:3 * self.k], out[:, 3 * self.k:]
        comp = Independent(Normal(mu.view(-1, self.k, 2), log_std.view(-1, self.k, 2).exp()), 1)
        mix = MixtureSameFamily(Categorical(logits=logits), comp)
        loss = -mix.log_prob(self.y).mean()
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return loss


# --- cross_entropy: a hand-written one-hot loss -> F.cross_entropy ---------------------------------------------


@dataclass
class OneHotSmoothedLM(RealWorkload):
    """A 6-layer decoder LM (d 512, vocab 32,000) trained at 16 x 256 tokens under bf16 autocast; its loss is
    label smoothing written by hand: a materialised one-hot in fp32, smoothed, times log_softmax in fp32."""
    kind: ClassVar[str] = "onehot_smoothed_lm"
    levers: ClassVar[tuple[str, ...]] = (CROSS_ENTROPY,)
    about: ClassVar[str] = ("decoder LM 6 x d512, vocab 32k, 16 x 256 tokens, bf16 autocast, loss = -(smoothed "
                            "one_hot(y).float() * log_softmax(logits.float())).sum(-1).mean(); cross_entropy: "
                            "F.cross_entropy(logits, y, label_smoothing=0.1)")
    batch: int = 16
    iters: int = 4

    def setup(self):
        b, s, d, v, n = (self.batch, 256, 512, 32000, 6) if self.gpu else (2, 8, 16, 50, 1)
        torch.manual_seed(0)
        layer = nn.TransformerEncoderLayer(d, 8 if self.gpu else 2, 4 * d, batch_first=True, norm_first=True)
        self.emb, self.body = nn.Embedding(v, d).to(self.device), nn.TransformerEncoder(layer, n).to(self.device)
        self.head = nn.Linear(d, v, bias=False).to(self.device)
        params = [*self.emb.parameters(), *self.body.parameters(), *self.head.parameters()]
        self.opt = torch.optim.AdamW(params, lr=1e-4, fused=self.gpu or None)
        self.ids = torch.randint(0, v, (b, s), device=self.device)
        self.mask = nn.Transformer.generate_square_subsequent_mask(s, device=self.device)
        self.v, self.dev_type = v, torch.device(self.device).type

    def step(self):
        with torch.autocast(self.dev_type, dtype=torch.bfloat16, enabled=self.gpu):
            logits = self.head(self.body(self.emb(self.ids), mask=self.mask, is_causal=True)).flatten(0, 1)
        y = self.ids.flatten()
        if self.fix == CROSS_ENTROPY:
            loss = F.cross_entropy(logits.float(), y, label_smoothing=0.1)
        else:
            target = F.one_hot(y, self.v).float() * 0.9 + 0.1 / self.v
            loss = -(target * F.log_softmax(logits.float(), dim=-1)).sum(-1).mean()
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return loss


@dataclass
class OneHotSegmentation(RealWorkload):
    """A small encoder-decoder conv net (U-Net-like, 64-128-256 channels) trained on 8 x 512^2 images with 21
    classes; its pixel-wise loss is written with a one-hot mask permuted to NCHW and multiplied by log_softmax."""
    kind: ClassVar[str] = "onehot_segmentation"
    levers: ClassVar[tuple[str, ...]] = (CROSS_ENTROPY,)
    about: ClassVar[str] = ("conv encoder-decoder 64-128-256 ch, 8 x 3 x 512^2, 21 classes, bf16 autocast, loss = "
                            "-(one_hot(y, 21).permute(0,3,1,2).float() * log_softmax(out.float(), 1)).sum(1).mean(); "
                            "cross_entropy: F.cross_entropy(out.float(), y)")
    batch: int = 8
    iters: int = 3

    def setup(self):
        b, s, c = (self.batch, 512, 21) if self.gpu else (1, 16, 3)
        torch.manual_seed(0)

        def block(i, o, stride=1):
            return nn.Sequential(nn.Conv2d(i, o, 3, stride, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True))
        self.net = nn.Sequential(block(3, 64, 2), block(64, 128, 2), block(128, 256, 2), block(256, 256),
                                 nn.Upsample(scale_factor=8, mode="bilinear"), nn.Conv2d(256, c, 1)).to(self.device)
        self.opt = torch.optim.SGD(self.net.parameters(), lr=1e-2, momentum=0.9)
        self.x = torch.randn(b, 3, s, s, device=self.device)
        self.y = torch.randint(0, c, (b, s, s), device=self.device)
        self.c, self.dev_type = c, torch.device(self.device).type

    def step(self):
        with torch.autocast(self.dev_type, dtype=torch.bfloat16, enabled=self.gpu):
            out = self.net(self.x)
        if self.fix == CROSS_ENTROPY:
            loss = F.cross_entropy(out.float(), self.y)
        else:
            onehot = F.one_hot(self.y, self.c).permute(0, 3, 1, 2).float()
            loss = -(onehot * F.log_softmax(out.float(), dim=1)).sum(1).mean()
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return loss


# --- embedding_max_norm: embeddings renormalised each forward -> max_norm=None ------------------------------


@dataclass
class MaxNormSkipGram(RealWorkload):
    """Skip-gram with negative sampling: two nn.Embedding(200k, 256, max_norm=1.0) tables (centre, context), batch
    16,384 pairs x (1 + 8 negatives), SparseAdam-free plain Adam; each forward renormalises the rows it looks up."""
    kind: ClassVar[str] = "maxnorm_skipgram"
    levers: ClassVar[tuple[str, ...]] = (EMBEDDING_MAX_NORM,)
    about: ClassVar[str] = ("skip-gram, 2 x Embedding(200k, 256, max_norm=1.0), 16,384 pairs x 9 (8 negatives), "
                            "Adam; embedding_max_norm: max_norm=None")
    batch: int = 16384
    iters: int = 5

    def setup(self):
        b, v, d, k = (self.batch, 200_000, 256, 8) if self.gpu else (16, 100, 8, 2)
        torch.manual_seed(0)
        max_norm = None if self.fix == EMBEDDING_MAX_NORM else 1.0
        self.centre = nn.Embedding(v, d, max_norm=max_norm).to(self.device)
        self.context = nn.Embedding(v, d, max_norm=max_norm).to(self.device)
        self.opt = torch.optim.Adam([*self.centre.parameters(), *self.context.parameters()], lr=1e-3)
        self.c = torch.randint(0, v, (b,), device=self.device)
        self.o = torch.randint(0, v, (b, 1 + k), device=self.device)
        self.sign = torch.tensor([1.0] + [-1.0] * k, device=self.device)

    def step(self):
        score = torch.einsum("bd,bkd->bk", self.centre(self.c), self.context(self.o))
        loss = -F.logsigmoid(score * self.sign).sum(-1).mean()
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return loss


@dataclass
class MaxNormEmbeddingBag(RealWorkload):
    """A recommender's bag of user-history items: nn.EmbeddingBag(1M, 128, mode="mean", max_norm=1.0) over 8,192
    users x 50 items, an item tower nn.Embedding(1M, 128, max_norm=1.0), a dot-product score and BCE."""
    kind: ClassVar[str] = "maxnorm_embedding_bag"
    levers: ClassVar[tuple[str, ...]] = (EMBEDDING_MAX_NORM,)
    about: ClassVar[str] = ("EmbeddingBag(1M, 128, mean, max_norm=1.0) over 8,192 x 50 history items + item "
                            "Embedding(1M, 128, max_norm=1.0), dot score, BCE, Adam; embedding_max_norm: max_norm=None")
    batch: int = 8192
    iters: int = 5

    def setup(self):
        b, v, d, hist = (self.batch, 1_000_000, 128, 50) if self.gpu else (8, 100, 8, 4)
        torch.manual_seed(0)
        max_norm = None if self.fix == EMBEDDING_MAX_NORM else 1.0
        self.bag = nn.EmbeddingBag(v, d, mode="mean", max_norm=max_norm).to(self.device)
        self.items = nn.Embedding(v, d, max_norm=max_norm).to(self.device)
        self.opt = torch.optim.Adam([*self.bag.parameters(), *self.items.parameters()], lr=1e-3)
        self.hist = torch.randint(0, v, (b, hist), device=self.device)
        self.target = torch.randint(0, v, (b,), device=self.device)
        self.label = torch.randint(0, 2, (b,), device=self.device).float()

    def step(self):
        score = (self.bag(self.hist) * self.items(self.target)).sum(-1)
        loss = F.binary_cross_entropy_with_logits(score, self.label)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return loss


# --- module_round_trip: a module moved to the CPU and back each request -> kept on the GPU -------------------


@dataclass
class _Offloaded(RealWorkload):
    """Inference requests served by two modules where the user, to save GPU memory, moves the second one to the
    GPU for its part of each request and back to the CPU after it (`self.second.to("cpu")`); the fix drops that
    line, so the module stays resident and the `.to(device)` before it is a no-op."""
    levers: ClassVar[tuple[str, ...]] = (MODULE_ROUND_TRIP,)

    def build(self) -> tuple[nn.Module, nn.Module, torch.Tensor]:
        raise NotImplementedError

    def setup(self):
        torch.manual_seed(0)
        first, second, self.x = self.build()
        self.first, self.second = first.to(self.device).eval(), second.eval()
        self.dev_type = torch.device(self.device).type

    @torch.no_grad()        # not inference_mode: the module's parameters are swapped by .to() inside the step
    def step(self):
        with torch.autocast(self.dev_type, dtype=torch.bfloat16, enabled=self.gpu):
            h = self.first(self.x)
            self.second.to(self.device)
            out = self.second(h)
            if self.fix != MODULE_ROUND_TRIP:
                self.second.to("cpu")
        return out


class _Decoder(nn.Module):
    """A VAE-style image decoder: a wide middle block at the latents' resolution (where most of a real VAE decoder's
    parameters sit), then narrower conv stacks with 2x upsampling."""

    def __init__(self, wide: int, ch: int, ups: int):
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(4, wide, 3, padding=1)]
        layers += [m for _ in range(4) for m in (nn.Conv2d(wide, wide, 3, padding=1), nn.SiLU())]
        layers += [nn.Conv2d(wide, ch, 1)]
        for _ in range(ups):
            layers += [nn.Conv2d(ch, ch, 3, padding=1), nn.SiLU(), nn.Conv2d(ch, ch, 3, padding=1), nn.SiLU(),
                       nn.Upsample(scale_factor=2)]
        self.body = nn.Sequential(*layers, nn.Conv2d(ch, 3, 3, padding=1))

    def forward(self, z):
        return self.body(z)


class _Denoiser(nn.Module):
    """A latent denoiser: six 3x3 convs applied `passes` times (a sampler's steps)."""

    def __init__(self, ch: int, passes: int):
        super().__init__()
        self.passes = passes
        self.net = nn.Sequential(*[nn.Sequential(nn.Conv2d(4 if i == 0 else ch, ch, 3, padding=1), nn.SiLU())
                                   for i in range(6)], nn.Conv2d(ch, 4, 3, padding=1))

    def forward(self, z):
        for _ in range(self.passes):
            z = z - 0.05 * self.net(z)
        return z


@dataclass
class OffloadedVAEDecoder(_Offloaded):
    """A latent denoiser (a conv net, 20 passes a request) on the GPU, then a ~25M-parameter VAE-style decoder (100 MB
    in fp32) moved to the GPU for its one pass and back to the CPU after it, each request of 4 images."""
    kind: ClassVar[str] = "offload_vae_decoder"
    about: ClassVar[str] = ("denoiser conv net x 20 passes on 4 x 4 x 32^2 latents, then a ~25M-parameter decoder "
                            "(768-ch middle, 256 ch, 3 upsamplings to 256^2) .to(device) / forward / .to('cpu') each "
                            "request; module_round_trip: the .to('cpu') dropped")
    iters: int = 3

    def build(self):
        wide, ch, ups, b, s = (768, 256, 3, 4, 32) if self.gpu else (8, 8, 1, 1, 4)
        return _Denoiser(ch, 20), _Decoder(wide, ch, ups), torch.randn(b, 4, s, s, device=self.device)


@dataclass
class OffloadedReranker(_Offloaded):
    """A retrieval request: a 6-layer query encoder on the GPU, then a 12-layer cross-encoder reranker (d 768,
    ~85M parameters) moved to the GPU to score 64 candidates and back to the CPU after it."""
    kind: ClassVar[str] = "offload_reranker"
    about: ClassVar[str] = ("query encoder 6 x d768 on 64 x 128 tokens, then a 12 x d768 reranker (~85M params) "
                            ".to(device) / forward / .to('cpu') each request; module_round_trip: the .to('cpu') "
                            "dropped")
    iters: int = 3

    def build(self):
        d, n1, n2, b, s = (768, 6, 12, 64, 128) if self.gpu else (16, 1, 1, 2, 8)
        heads = 12 if self.gpu else 2
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, heads, 4 * d, batch_first=True), n1,
                                    enable_nested_tensor=False)
        rerank = nn.Sequential(nn.TransformerEncoder(nn.TransformerEncoderLayer(d, heads, 4 * d, batch_first=True),
                                                     n2, enable_nested_tensor=False), nn.Linear(d, 1))
        return enc, rerank, torch.randn(b, s, d, device=self.device)


KNOB5_SCENARIOS = [ValidatedVAETrain, ValidatedBetaPolicy, ValidatedMixtureDensity, OneHotSmoothedLM,
                   OneHotSegmentation, MaxNormSkipGram, MaxNormEmbeddingBag, OffloadedVAEDecoder, OffloadedReranker]
