# A torch.compile'd MLP (Inductor fuses its pointwise ops) trained with AdamW(foreach=False): the compiled
# forward and backward leave the optimizer's per-parameter kernels in eager, launch-bound on a GPU.
import torch

dev = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
layers = [m for _ in range(4) for m in (torch.nn.Linear(512, 512), torch.nn.LayerNorm(512), torch.nn.GELU())]
model = torch.nn.Sequential(*layers).to(dev)
# (on a CPU dry run, AOT autograd without Inductor's C++ compile: the same graphs, seconds instead of a minute)
step_model = torch.compile(model, backend="inductor" if dev == "cuda" else "aot_eager")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
x = torch.randn(128, 512, device=dev)
for _ in range(20):
    opt.zero_grad()
    step_model(x).square().mean().backward()
    opt.step()
if dev == "cuda":
    torch.cuda.synchronize()
