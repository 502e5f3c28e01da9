# A small MLP trained with torch.optim.AdamW(foreach=False) and zero_grad(set_to_none=False): per-parameter
# optimizer kernels and zero fills, launch-bound on a GPU.
import torch

dev = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
model = torch.nn.Sequential(*[m for _ in range(12) for m in (torch.nn.Linear(256, 256), torch.nn.GELU())]).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
x = torch.randn(64, 256, device=dev)
for _ in range(30):
    opt.zero_grad(set_to_none=False)
    model(x).square().mean().backward()
    opt.step()
if dev == "cuda":
    torch.cuda.synchronize()
