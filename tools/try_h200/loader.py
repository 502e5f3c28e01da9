# A DataLoader over host tensors without pin_memory, each batch copied to the GPU for a small conv net.
import torch
from torch.utils.data import DataLoader, TensorDataset

dev = "cuda" if torch.cuda.is_available() else "cpu"
n = 4096 if dev == "cuda" else 512
torch.manual_seed(0)
data = TensorDataset(torch.randn(n, 3, 64, 64), torch.randint(0, 10, (n,)))
loader = DataLoader(data, batch_size=256, shuffle=True)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                            torch.nn.Flatten(), torch.nn.Linear(32, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in loader:
    x, y = x.to(dev), y.to(dev)
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
if dev == "cuda":
    torch.cuda.synchronize()
