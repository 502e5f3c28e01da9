"""Ground truth for the DataLoader workers knob (dataloader_workers): `DataLoader(..., num_workers=4)` and nothing else,
on three training loops whose batches are made on the host by real library code.

    loader_tokenize_lm     text: each sample a sentence tokenized in Python (regex split, lower-casing, a vocabulary
                           lookup, truncation and padding), a small Transformer language model trained on it
    loader_numpy_features  tabular: each sample's features computed with numpy (an FFT's magnitudes, a moving
                           average, clipping to quantiles) from a raw signal, an MLP regressor trained on them
    loader_stft_audio      audio: each sample a synthetic clip turned into a log-magnitude spectrogram by torch.stft
                           on the CPU (torch ops inside the batch's range), a small CNN classifier trained on it

The pair differs by the knob alone, as `tracetriage try` turns it: before, num_workers=0; after, num_workers=4 (no
pin_memory, no persistent_workers: one iterator serves every window, so the workers start once, before the first).
traces/realworld/dataloader_cnn measured the knob with pin_memory and non_blocking beside it; these measure it bare.

Steady state, as DataLoaderCNN keeps it (capture/realworld_vision.py): the workers prefetch while the profiler
exports, so before each window (outside the profiler and the timer) the loop runs `settle` more steps on the same
iterator and syncs, leaving the queue as a long run keeps it. Each window records how long the host waited in
next() (`next_wait_ms`): about zero means the workers kept up. Random weights, synthetic data, nothing downloads.
"""
from __future__ import annotations

import math
import random
import re
import zlib
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

from tracetriage.analyzers.whatif.levers import DATALOADER_WORKERS
from tracetriage.capture.realworld_common import LoaderFed, RealWorkload

LENGTH = 1 << 20        # samples: no window reaches an epoch's end


@dataclass
class _LoaderTrain(LoaderFed, RealWorkload):
    """A training loop fed by next() on one DataLoader iterator; subclasses give the dataset, the model and how a
    batch goes to the device."""
    levers: ClassVar[tuple[str, ...]] = (DATALOADER_WORKERS,)
    workers: int = 4                 # the knob's num_workers (levers/dataloader_workers.WORKERS)
    batch: int = 64
    iters: int = 8
    settle: int = 24                 # > the 8 batches 4 workers x prefetch_factor 2 hold ready
    smoke: ClassVar[dict] = {"iters": 2, "settle": 2}

    def dataset(self) -> Dataset:
        raise NotImplementedError

    def model(self) -> nn.Module:
        raise NotImplementedError

    def loss(self, batch) -> torch.Tensor:
        raise NotImplementedError

    def setup(self):
        torch.manual_seed(0)
        self.fixed = self.fix == DATALOADER_WORKERS
        workers = (self.workers if self.gpu else 2) if self.fixed else 0
        self.net = self.model().to(self.device).train()
        self.opt = torch.optim.AdamW(self.net.parameters(), lr=1e-4)
        self.loader = DataLoader(self.dataset(), batch_size=self.batch if self.gpu else 4, drop_last=True,
                                 num_workers=workers)
        self.it = iter(self.loader)
        self.waited_ns = 0
        self.record.update(batch=self.loader.batch_size, num_workers=self.loader.num_workers)

    def step(self):
        batch = self.next_batch()
        loss = self.loss([t.to(self.device) for t in batch])
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return loss


# --- text: a tokenizer written in Python -------------------------------------------------------------------

_WORDS = ("the model reads a batch of tokens and predicts the next one while the loader builds another batch on "
          "the host in python so the device waits unless workers make them ahead of time profile first then "
          "change one thing and measure again").split()
_TOKEN = re.compile(r"[a-z]+|[0-9]+|[^\sa-z0-9]")


class SentenceTokens(Dataset):
    """Sample i: a sentence of 60-200 words drawn with random.Random(i), numbers and punctuation among them,
    tokenized as a word-level tokenizer written in Python does it: lower-cased, split by a regex, each token
    looked up in the vocabulary (unknown: its crc32 into the spare ids), truncated and padded to `seq` + 1."""

    def __init__(self, seq: int, vocab: int):
        self.seq, self.vocab = seq, vocab
        self.ids = {w: i + 2 for i, w in enumerate(sorted(set(_WORDS)))}       # 0 pad, 1 unknown

    def __len__(self):
        return LENGTH

    def __getitem__(self, i):
        rng = random.Random(i)
        words = [rng.choice(_WORDS).capitalize() if rng.random() < 0.1 else rng.choice(_WORDS)
                 for _ in range(rng.randint(60, 200))]
        words += [str(rng.randint(0, 10_000)) for _ in range(rng.randint(0, 10))] + [rng.choice(",.;:!?")]
        rng.shuffle(words)
        tokens = _TOKEN.findall(" ".join(words).lower())
        spare = self.vocab - len(self.ids) - 2
        ids = [self.ids.get(t, 2 + len(self.ids) + zlib.crc32(t.encode()) % spare) for t in tokens]
        ids = (ids + [0] * (self.seq + 1))[: self.seq + 1]
        return (torch.tensor(ids, dtype=torch.long),)        # a 1-tuple: collated to [ids], as the others


@dataclass
class LoaderTokenizeLM(_LoaderTrain):
    """A 4-layer Transformer encoder (384 wide, 6 heads, fp32) as a language model over 128 tokens, batch 64, fed by
    sentences tokenized in Python in the DataLoader (0.17 ms a sample on the development host: ~11 ms a batch, about
    the GPU's step: four workers make a batch in less than a step, so the step sets the pace after)."""
    kind: ClassVar[str] = "loader_tokenize_lm"
    about: ClassVar[str] = ("4-layer Transformer LM (384 wide, 6 heads, 128 tokens, vocab 8192, AdamW) at batch 64 fed "
                            "by a DataLoader tokenizing sentences in Python (regex split, vocabulary lookup, padding), "
                            "num_workers=0; dataloader_workers: num_workers=4, nothing else")
    seq: int = 128
    vocab: int = 8192
    width: int = 384
    heads: int = 6

    def dataset(self):
        return SentenceTokens(self.seq if self.gpu else 16, self.vocab)

    def model(self):
        w, heads = (self.width, self.heads) if self.gpu else (32, 4)
        layer = nn.TransformerEncoderLayer(w, heads, 4 * w, dropout=0.0, batch_first=True)
        return nn.ModuleDict({"embed": nn.Embedding(self.vocab, w), "body": nn.TransformerEncoder(layer, 4),
                              "head": nn.Linear(w, self.vocab)})

    def loss(self, batch):
        (ids,) = batch
        x = self.net["body"](self.net["embed"](ids[:, :-1]))
        return F.cross_entropy(self.net["head"](x).flatten(0, 1), ids[:, 1:].flatten(), ignore_index=0)


# --- tabular: features computed with numpy --------------------------------------------------------------------

class SignalFeatures(Dataset):
    """Sample i: a raw signal of `n` points (np.random.default_rng(i)), its features computed as a feature pipeline
    does: the FFT's magnitudes, a moving average, the signal clipped to its 1st-99th percentiles, and summary
    statistics; the target a function of them."""

    def __init__(self, n: int):
        self.n = n

    def __len__(self):
        return LENGTH

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        t = np.arange(self.n)
        x = np.sin(t * rng.uniform(0.01, 0.2)) + 0.3 * rng.standard_normal(self.n)
        spectrum = np.abs(np.fft.rfft(x))[: self.n // 4]
        smooth = np.convolve(x, np.ones(16) / 16, mode="same")[:: 4]
        lo, hi = np.percentile(x, [1, 99])
        clipped = np.clip(x, lo, hi)[:: 4]
        stats = np.array([x.mean(), x.std(), np.median(x), lo, hi, np.abs(np.diff(x)).mean()])
        feats = np.concatenate([spectrum, smooth, clipped, stats]).astype(np.float32)
        return torch.from_numpy(feats), torch.tensor([spectrum.argmax() / len(spectrum)], dtype=torch.float32)


@dataclass
class LoaderNumpyFeatures(_LoaderTrain):
    """An MLP (3 hidden layers of 2048) regressing on 774 features a sample, batch 128, its features computed with
    numpy in the DataLoader (1 ms a sample on the development host, np.percentile most of it: a batch takes far
    longer than the step, so even four workers leave the step waiting)."""
    kind: ClassVar[str] = "loader_numpy_features"
    about: ClassVar[str] = ("MLP regressor (774 -> 3 x 2048 -> 1, AdamW) at batch 128 fed by a DataLoader computing "
                            "each sample's features with numpy (rfft magnitudes, moving average, percentile clip, "
                            "statistics) from a 1024-point signal, num_workers=0; dataloader_workers: num_workers=4, "
                            "nothing else")
    batch: int = 128
    points: int = 1024
    width: int = 2048

    def features(self) -> int:
        """SignalFeatures' width: a quarter of the spectrum, every 4th point twice, 6 statistics (774 at 1024)."""
        n = self.points if self.gpu else 64
        return n // 4 + 2 * math.ceil(n / 4) + 6

    def dataset(self):
        return SignalFeatures(self.points if self.gpu else 64)

    def model(self):
        w = self.width if self.gpu else 32
        return nn.Sequential(nn.Linear(self.features(), w), nn.GELU(), nn.Linear(w, w), nn.GELU(), nn.Linear(w, w),
                             nn.GELU(), nn.Linear(w, 1))

    def loss(self, batch):
        x, y = batch
        return F.mse_loss(self.net(x), y)


# --- audio: spectrograms by torch.stft on the CPU ------------------------------------------------------------

class ClipSpectrograms(Dataset):
    """Sample i: a clip of `samples` points (a chirp, two tones and noise, torch.Generator seeded with i) turned into
    a log-magnitude spectrogram by torch.stft (n_fft 512, hop 128, Hann window) on the CPU; its label, which tone."""

    def __init__(self, samples: int, classes: int):
        self.samples, self.classes = samples, classes
        self.window = torch.hann_window(512)

    def __len__(self):
        return LENGTH

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        label = i % self.classes
        t = torch.arange(self.samples) / 16_000
        clip = (torch.sin(2 * math.pi * (200 + 40 * label) * t) + 0.5 * torch.sin(2 * math.pi * 1_000 * t * t)
                + 0.1 * torch.randn(self.samples, generator=g))
        spec = torch.stft(clip, 512, hop_length=128, window=self.window, return_complex=True).abs()
        return torch.log1p(spec).unsqueeze(0), torch.tensor(label)


@dataclass
class LoaderStftAudio(_LoaderTrain):
    """A 4-block CNN classifier on 257 x 126 log spectrograms of 1 s clips (16 kHz), batch 32, each spectrogram
    made by torch.stft on the CPU in the DataLoader (2.9 ms a sample on one core of the development host). The main
    process runs stft on torch's intra-op threads, a worker on one (DataLoader sets it so): the knob's four workers
    may make a batch slower each than the main process did, which the lever's model (work / 4) does not know."""
    kind: ClassVar[str] = "loader_stft_audio"
    about: ClassVar[str] = ("4-block CNN (32-256 channels, AdamW) at batch 32 on 257x126 log spectrograms made in a "
                            "DataLoader by torch.stft on the CPU from synthetic 1 s 16 kHz clips, num_workers=0; "
                            "dataloader_workers: num_workers=4, nothing else")
    batch: int = 32
    samples: int = 16_000
    classes: int = 10

    def dataset(self):
        return ClipSpectrograms(self.samples if self.gpu else 2_048, self.classes)

    def model(self):
        chans = (1, 32, 64, 128, 256) if self.gpu else (1, 4, 4, 4, 4)
        blocks = [nn.Sequential(nn.Conv2d(a, b, 3, padding=1), nn.BatchNorm2d(b), nn.ReLU(), nn.MaxPool2d(2))
                  for a, b in zip(chans, chans[1:])]
        return nn.Sequential(*blocks, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(chans[-1], self.classes))

    def loss(self, batch):
        x, y = batch
        return F.cross_entropy(self.net(x), y)


LOADER_SCENARIOS = (LoaderTokenizeLM, LoaderNumpyFeatures, LoaderStftAudio)
