#!/usr/bin/env python3
"""pending_pairs: measured before/after pairs for a lever written without one (pinned_batches, the lever in
analyzers/whatif/levers/pinned_batches.py: a DataLoader's pageable batch copies pinned and copied non_blocking).

Three workloads, each a training loop over a DataLoader of in-memory tensors whose batches go to the GPU with
`.to(device)` (pageable) before and `pin_memory=True` + `.to(device, non_blocking=True)` after; the third's copies
are a few kB a step (token ids), where pinning should buy nothing. The harness is fresh_harness.py (beside this file).

    python3 pending_pairs.py --out DIR                        # on the GPU (~120 s on one H100/H200)
    DEVICE=cpu SMALL=1 python pending_pairs.py --out /tmp/pp  # plumbing dry run
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from fresh_harness import DEVICE, IS_CUDA, SMALL, Runner, Suite

SUITE = Suite("pending_pairs", budget_s=200)
WORKLOADS = SUITE.workloads
workload = SUITE.workload


def _loader(tensors, batch, pinned):
    from torch.utils.data import DataLoader, TensorDataset

    return DataLoader(TensorDataset(*tensors), batch_size=batch, shuffle=True, drop_last=True,
                      pin_memory=pinned and IS_CUDA, num_workers=0)


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
    rows, dim, batch = (512, 64, 64) if SMALL else (32768, 2048, 4096)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(rows, dim, generator=g), torch.randint(0, 2, (rows,), generator=g).float()
    model = nn.Sequential(nn.Linear(dim, 1024), nn.ReLU(), nn.Linear(1024, 256), nn.ReLU(),
                          nn.Linear(256, 1)).to(DEVICE)
    pinned = variant == "after"
    return _train_runner(model, _loader((x, y), batch, pinned),
                         lambda m, a, b: F.binary_cross_entropy_with_logits(m(a).squeeze(1), b), pinned)


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


if __name__ == "__main__":
    SUITE.main()
