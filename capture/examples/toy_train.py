"""A toy training loop to try `tracetriage capture script` on:

    tracetriage capture --out toy.json.gz script capture/examples/toy_train.py --steps 20

It has the usual sins in small doses: batches built on the host each step, a
pageable host->device copy, and the loss read with .item() for logging.
"""
import argparse

import torch
import torch.nn as nn

from tracetriage.capture.ranges import named_range

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=20)
ap.add_argument("--batch", type=int, default=64)
args = ap.parse_args()

device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(args.steps):
    with named_range("data"):
        x = torch.randn(args.batch, 1024)            # built on the host
        y = torch.randn(args.batch, 1024)
        x, y = x.to(device), y.to(device)            # pageable copies
    with named_range("train_step"):
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    if step % 5 == 0:
        print(f"step {step} loss {loss.item():.4f}")  # a sync every 5 steps
