"""A small user training loop, the sample for source lines (traces/script-user-train-stacks.json.gz).

Each step prepares its batch in Python on the host, runs an MLP with a torch.compile'd activation,
and reads the loss back with .item() (a sync). Recorded with Python stacks, the report names these
functions as the user's own frames behind the hotspots, the idle gaps and the Next line:

    python -m tracetriage.capture.examples.user_train --out traces/script-user-train-stacks.json.gz   # on a GPU
"""
from __future__ import annotations

import argparse

import torch


def make_batch(n, d, device):
    rows = [[(i * 7 + j) % 13 / 13.0 for j in range(d)] for i in range(n)]   # Python work on the host
    return torch.tensor(rows, device=device)


def log_loss(loss):
    return loss.item()          # the sync: the host waits for the GPU to drain


@torch.compile
def activation(x):
    return torch.sigmoid(x * 1.5 + 0.5) * x


def train_step(model, opt, x):
    out = activation(model(x))
    loss = (out * out).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return log_loss(loss)


def build(device):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 512)).to(device)
    return model, torch.optim.SGD(model.parameters(), lr=1e-3)


def main() -> None:
    from tracetriage.capture.harness import record

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=10)
    a = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model, opt = build(device)

    def step():
        train_step(model, opt, make_batch(64, 512, device))

    for _ in range(5):          # warm up outside the profiler: compile, cuBLAS handles
        step()
    record(step, device=device, steps=a.steps, out_path=__import__("pathlib").Path(a.out), with_stack=True)


if __name__ == "__main__":
    main()
