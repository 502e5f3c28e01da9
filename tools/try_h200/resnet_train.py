# torchvision resnet18 (random weights) trained in fp32 on random images: cuDNN convolutions, the case for
# cudnn.benchmark and bf16 autocast.
import torch
import torchvision

dev = "cuda" if torch.cuda.is_available() else "cpu"
b, hw = (64, 224) if dev == "cuda" else (2, 64)
torch.manual_seed(0)
model = torchvision.models.resnet18(num_classes=100).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(b, 3, hw, hw, device=dev)
y = torch.randint(0, 100, (b,), device=dev)
for _ in range(12):
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
if dev == "cuda":
    torch.cuda.synchronize()
