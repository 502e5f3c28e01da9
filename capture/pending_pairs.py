#!/usr/bin/env python3
"""pending_pairs: measured before/after pairs for a lever written without one (pinned_batches, the lever in
analyzers/whatif/levers/pinned_batches.py: a DataLoader's pageable batch copies pinned and copied non_blocking).

Six workloads, each a training loop over a DataLoader of in-memory tensors whose batches go to the GPU with
`.to(device)` (pageable) before and `pin_memory=True` + `.to(device, non_blocking=True)` after; the third's copies
are a few kB a step (token ids), where pinning should buy nothing. The last three were added after the first three
were measured: a loader that hands out whole batch slices (no row-by-row fetch on the host, which the shuffled
tabular pair showed the lever does not model), an audio encoder on spectrograms and a ViT on images, where the copy
is a smaller share of a longer step. The harness is fresh_harness.py (beside this file).

    python3 pending_pairs.py --out DIR                        # on the GPU (~200 s on one H100/H200)
    DEVICE=cpu SMALL=1 python pending_pairs.py --out /tmp/pp  # plumbing dry run
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from fresh_harness import DEVICE, IS_CUDA, SMALL, Runner, Suite

SUITE = Suite("pending_pairs", budget_s=330)
WORKLOADS = SUITE.workloads
workload = SUITE.workload


def _loader(tensors, batch, pinned):
    from torch.utils.data import DataLoader, TensorDataset

    return DataLoader(TensorDataset(*tensors), batch_size=batch, shuffle=True, drop_last=True,
                      pin_memory=pinned and IS_CUDA, num_workers=0)


def _slices_loader(tensors, batch, pinned):
    """Whole-batch slices handed out one per step (batch_size=None: no per-row collate)."""
    from torch.utils.data import DataLoader

    return DataLoader(_Slices(tensors, batch), batch_size=None, shuffle=True, pin_memory=pinned and IS_CUDA)


def _tabular(dim_rows_batch):
    """The tabular pairs' data (rows x dim fp32, binary labels) and their MLP (dim-1024-256-1), seeded alike."""
    rows, dim, batch = dim_rows_batch
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(rows, dim, generator=g), torch.randint(0, 2, (rows,), generator=g).float()
    model = nn.Sequential(nn.Linear(dim, 1024), nn.ReLU(), nn.Linear(1024, 256), nn.ReLU(),
                          nn.Linear(256, 1)).to(DEVICE)
    return (x, y), batch, model


def _bce(m, a, b):
    return F.binary_cross_entropy_with_logits(m(a).squeeze(1), b)


def _train_runner(model, loader, loss_fn, pinned):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    st = {"it": None}

    def prepare():
        st["it"] = iter(loader)

    def step():
        try:
            xs = next(st["it"])
        except StopIteration:
            st["it"] = iter(loader)
            xs = next(st["it"])
        xs = [x.to(DEVICE, non_blocking=pinned) for x in xs]
        loss = loss_fn(model, *xs)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return Runner(step, prepare=prepare, extra=lambda: {"pinned": pinned, "batch": loader.batch_size})


@workload(
    "tabular_mlp_pageable",
    needs=(),
    domain="tabular",
    mode="training",
    compiled=False,
    description="An MLP (2048-1024-256-1) trained on an in-memory TensorDataset of 32k x 2048 fp32 rows, batch 4096, "
    "each batch copied with X.to(device) from pageable memory (32 MB a step).",
    fix_before="loader = DataLoader(ds, batch_size=4096, shuffle=True); x = x.to(device)",
    fix_after="loader = DataLoader(ds, batch_size=4096, shuffle=True, pin_memory=True); "
              "x = x.to(device, non_blocking=True)",
    expect="the 32 MB copy at pageable (~10 GB/s) vs pinned (~25-50 GB/s) rates; the step's GPU work is a few ms",
    steps=6, warmup=2, active=2, cap_s=45,
)
def build_tabular(variant):
    tensors, batch, model = _tabular((512, 64, 64) if SMALL else (32768, 2048, 4096))
    pinned = variant == "after"
    return _train_runner(model, _loader(tensors, batch, pinned), _bce, pinned)


@workload(
    "convnet_images_pageable",
    needs=(),
    domain="vision",
    mode="training",
    compiled=False,
    description="A small conv net trained on in-memory fp32 images (2k x 3 x 96 x 96), batch 256, copied pageable "
    "(28 MB a step).",
    fix_before="loader = DataLoader(ds, batch_size=256, shuffle=True); x = x.to(device)",
    fix_after="loader = DataLoader(ds, batch_size=256, shuffle=True, pin_memory=True); "
              "x = x.to(device, non_blocking=True)",
    expect="a 28 MB copy against ~5-10 ms of conv work a step",
    steps=6, warmup=2, active=2, cap_s=45,
)
def build_convnet(variant):
    n, size, batch = (64, 32, 16) if SMALL else (2048, 96, 256)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(n, 3, size, size, generator=g), torch.randint(0, 10, (n,), generator=g)
    model = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(128, 10)).to(DEVICE)
    pinned = variant == "after"
    return _train_runner(model, _loader((x, y), batch, pinned), lambda m, a, b: F.cross_entropy(m(a), b), pinned)


@workload(
    "lm_token_ids_pageable",
    needs=(),
    domain="language",
    mode="training",
    compiled=False,
    description="A 4-layer transformer LM trained on in-memory token ids (batch 32 x 256 int64: 64 kB a step) copied "
    "pageable: the copies are tiny, pinning should buy nothing (a control).",
    fix_before="loader = DataLoader(ds, batch_size=32, shuffle=True); x = x.to(device)",
    fix_after="loader = DataLoader(ds, batch_size=32, shuffle=True, pin_memory=True); "
              "x = x.to(device, non_blocking=True)",
    expect="< 2%: 64 kB of ids against a GEMM-bound step",
    steps=6, warmup=2, active=2, cap_s=45,
)
def build_lm(variant):
    n, seq, batch, d, vocab = (64, 32, 8, 64, 500) if SMALL else (2048, 256, 32, 512, 8000)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (n, seq + 1), generator=g)

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            layer = nn.TransformerEncoderLayer(d, 8, 4 * d, batch_first=True, norm_first=True)
            self.body = nn.TransformerEncoder(layer, 4)
            self.head = nn.Linear(d, vocab)

        def forward(self, t):
            mask = nn.Transformer.generate_square_subsequent_mask(t.shape[1], device=t.device)
            return self.head(self.body(self.emb(t), mask=mask, is_causal=True))

    model = LM().to(DEVICE)
    pinned = variant == "after"

    def loss(m, t):
        logits = m(t[:, :-1])
        return F.cross_entropy(logits.reshape(-1, vocab), t[:, 1:].reshape(-1))

    return _train_runner(model, _loader((ids,), batch, pinned), loss, pinned)


class _Slices:
    """A dataset whose item i is the i-th whole batch (a contiguous slice of the in-memory tensors): the DataLoader
    (batch_size=None) copies one block per step instead of stacking rows one by one on the host."""

    def __init__(self, tensors, batch):
        self.tensors, self.batch = tensors, batch

    def __len__(self):
        return self.tensors[0].shape[0] // self.batch

    def __getitem__(self, i):
        lo = i * self.batch
        return [t[lo:lo + self.batch] for t in self.tensors]


@workload(
    "tabular_slices_pageable",
    needs=(),
    domain="tabular",
    mode="training",
    compiled=False,
    description="The tabular MLP's data (32k x 2048 fp32) handed out as whole batch slices (batch 4096: 32 MB a step), "
    "copied pageable: the copy without the host's row-by-row fetch.",
    fix_before="loader = DataLoader(slices, batch_size=None, shuffle=True); x = x.to(device)",
    fix_after="loader = DataLoader(slices, batch_size=None, shuffle=True, pin_memory=True); "
              "x = x.to(device, non_blocking=True)",
    expect="the 32 MB copy at pageable vs pinned rates against a few ms of GEMMs",
    steps=6, warmup=2, active=2, cap_s=45,
)
def build_tabular_slices(variant):
    tensors, batch, model = _tabular((512, 64, 64) if SMALL else (32768, 2048, 4096))
    pinned = variant == "after"
    return _train_runner(model, _slices_loader(tensors, batch, pinned), _bce, pinned)


@workload(
    "audio_mels_pageable",
    needs=(),
    domain="audio",
    mode="training",
    compiled=False,
    description="A conv front end + 6-layer transformer encoder trained on in-memory log-mel spectrograms "
    "(1024 x 80 x 1000 fp32), batch 64 as whole slices (20 MB a step), copied pageable.",
    fix_before="loader = DataLoader(slices, batch_size=None, shuffle=True); x = x.to(device)",
    fix_after="loader = DataLoader(slices, batch_size=None, shuffle=True, pin_memory=True); "
              "x = x.to(device, non_blocking=True)",
    expect="a 20 MB copy against a longer step of attention and GEMMs: a few percent",
    steps=6, warmup=2, active=2, cap_s=45,
)
def build_audio(variant):
    n, mels, frames, batch, d = (32, 16, 64, 8, 64) if SMALL else (1024, 80, 1000, 64, 384)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(n, mels, frames, generator=g), torch.randint(0, 35, (n,), generator=g)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.front = nn.Sequential(nn.Conv1d(mels, d, 3, stride=2, padding=1), nn.GELU(),
                                       nn.Conv1d(d, d, 3, stride=2, padding=1), nn.GELU())
            layer = nn.TransformerEncoderLayer(d, 4 if SMALL else 6, 4 * d, batch_first=True, norm_first=True)
            self.body = nn.TransformerEncoder(layer, 6)
            self.head = nn.Linear(d, 35)

        def forward(self, a):
            return self.head(self.body(self.front(a).transpose(1, 2)).mean(1))

    pinned = variant == "after"
    return _train_runner(Encoder().to(DEVICE), _slices_loader((x, y), batch, pinned),
                         lambda m, a, b: F.cross_entropy(m(a), b), pinned)


@workload(
    "vit_images_pageable",
    needs=(),
    domain="vision",
    mode="training",
    compiled=False,
    description="A ViT (patch 16, width 384, 6 layers) trained on in-memory fp32 images (512 x 3 x 224 x 224), "
    "batch 64 as whole slices (38.5 MB a step), copied pageable.",
    fix_before="loader = DataLoader(slices, batch_size=None, shuffle=True); x = x.to(device)",
    fix_after="loader = DataLoader(slices, batch_size=None, shuffle=True, pin_memory=True); "
              "x = x.to(device, non_blocking=True)",
    expect="a 38.5 MB copy beside ~10-20 ms of attention and GEMMs",
    steps=6, warmup=2, active=2, cap_s=45,
)
def build_vit(variant):
    n, size, batch, d = (16, 32, 4, 64) if SMALL else (512, 224, 64, 384)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(n, 3, size, size, generator=g), torch.randint(0, 100, (n,), generator=g)

    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch = nn.Conv2d(3, d, 16, stride=16)
            layer = nn.TransformerEncoderLayer(d, 4 if SMALL else 6, 4 * d, batch_first=True, norm_first=True)
            self.body = nn.TransformerEncoder(layer, 6)
            self.head = nn.Linear(d, 100)

        def forward(self, im):
            return self.head(self.body(self.patch(im).flatten(2).transpose(1, 2)).mean(1))

    pinned = variant == "after"
    return _train_runner(ViT().to(DEVICE), _slices_loader((x, y), batch, pinned),
                         lambda m, a, b: F.cross_entropy(m(a), b), pinned)


if __name__ == "__main__":
    SUITE.main()
