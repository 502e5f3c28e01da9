# fp32 matmuls on CUDA cores: a wide MLP's forward and backward in float32, the TF32 knob's case.
import torch

dev = "cuda" if torch.cuda.is_available() else "cpu"
n = 4096 if dev == "cuda" else 128
torch.manual_seed(0)
model = torch.nn.Sequential(*[m for _ in range(6) for m in (torch.nn.Linear(n, n), torch.nn.ReLU())]).to(dev)
x = torch.randn(2 * n, n, device=dev)
for _ in range(10):
    model.zero_grad()
    model(x).mean().backward()
if dev == "cuda":
    torch.cuda.synchronize()
