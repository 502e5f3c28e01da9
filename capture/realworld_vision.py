"""torchvision ground truth: a ResNet-18 training loop fed by a real DataLoader (dataloader_workers), and
ResNet-18 inference at batch 1 (cuda_graphs). Random weights; torchvision is imported in setup() only,
so this module imports without it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from tracetriage.analyzers.whatif.levers import CUDA_GRAPHS, DATALOADER_WORKERS
from tracetriage.capture.fixes import GraphedBody
from tracetriage.capture.realworld_common import LoaderFed, RealWorkload

IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


class SyntheticImages(Dataset):
    """Each sample a random uint8 side x side image made on the CPU, through ImageNet's training transforms
    (RandomResizedCrop + flip + ToDtype + Normalize): real host work per sample, as decoding-free as it gets."""

    def __init__(self, n: int, side: int, crop: int):
        from torchvision import tv_tensors
        from torchvision.transforms import v2

        self.n, self.side, self.image = n, side, tv_tensors.Image
        self.transform = v2.Compose([v2.RandomResizedCrop(crop, antialias=True), v2.RandomHorizontalFlip(),
                                     v2.ToDtype(torch.float32, scale=True), v2.Normalize(IMAGENET_MEAN, IMAGENET_STD)])

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        img = torch.randint(0, 256, (3, self.side, self.side), dtype=torch.uint8, generator=g)  # 192 KiB at 256
        return self.transform(self.image(img)).as_subclass(torch.Tensor), i % 1000


@dataclass
class DataLoaderCNN(LoaderFed, RealWorkload):
    """ResNet-18 fwd + bwd + SGD at batch 32 (224x224, channels_last, fp32) fed by a DataLoader.

    before: num_workers=0, pageable batches, .to(device): the main process builds every batch (32 crops,
    ~1-2 ms each) between training steps. dataloader_workers: 4 persistent workers, pin_memory=True,
    .to(device, non_blocking=True) (the pinned copy rides along: 19 MiB a step, under a ms either way; recorded
    as no_host_work until that lever's knob, num_workers, had a lever of its own).

    Steady state: workers prefetch while the profiler exports (CAPTURE-NOTES), so a window that followed
    a pause would start with workers x prefetch_factor = 8 batches ready; when the workers are slower than
    the GPU those come free and the window drains them, far from a long run's pace. So before each window
    (outside the profiler and the timer) the loop runs `settle` more steps on the same iterator and syncs:
    the queue is then as a long run keeps it, empty if the workers lag, full if they keep up. Each window
    records how long the host waited in next() (`next_wait_ms`): about zero means the workers kept up.
    """
    kind: ClassVar[str] = "dataloader_cnn"
    levers: ClassVar[tuple[str, ...]] = (DATALOADER_WORKERS,)
    needs: ClassVar[tuple[str, ...]] = ("torchvision",)
    about: ClassVar[str] = ("resnet18 train step (batch 32, 224^2, channels_last) fed by a DataLoader over random "
                            "uint8 images + RandomResizedCrop/flip/ToDtype/Normalize, num_workers=0, pageable; "
                            "dataloader_workers: 4 persistent workers, pin_memory, non_blocking, the pipeline run 24 "
                            "steps to its steady state before each window")
    batch: int = 32
    side: int = 256
    crop: int = 224
    workers: int = 4
    prefetch_factor: int = 2
    iters: int = 8
    settle: int = 24                 # > 8 buffered batches / the fraction the GPU outpaces lagging workers by
    smoke: ClassVar[dict] = {"iters": 2, "settle": 4}

    def setup(self):
        from torchvision.models import resnet18

        gpu = self.gpu
        batch, side, crop = (self.batch, self.side, self.crop) if gpu else (2, 40, 32)
        workers = self.workers if gpu else 2
        torch.manual_seed(0)
        self.model = resnet18(num_classes=1000).to(self.device, memory_format=torch.channels_last).train()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.fixed = self.fix == DATALOADER_WORKERS
        self.loader = DataLoader(SyntheticImages(1 << 20, side, crop), batch_size=batch, drop_last=True,
                                 num_workers=workers if self.fixed else 0, pin_memory=self.fixed and gpu,
                                 persistent_workers=self.fixed,
                                 prefetch_factor=self.prefetch_factor if self.fixed else None)
        self.it = iter(self.loader)
        self.waited_ns = 0
        self.record.update(batch=batch, image=[3, side, side], crop=crop, num_workers=self.loader.num_workers,
                           batch_bytes=batch * 3 * crop * crop * 4)

    def step(self):
        x, y = self.next_batch()
        x = x.to(self.device, non_blocking=self.fixed, memory_format=torch.channels_last)  # 19 MiB fp32
        y = y.to(self.device, non_blocking=self.fixed)
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()
        return loss


@dataclass
class CNNBatch1(RealWorkload):
    """ResNet-18 inference at batch 1, 224x224 fp32: ~70 small kernels a forward, each shorter than its launch.
    cuda_graphs: the forward captured once with torch.cuda.graph (tracetriage.capture.fixes.GraphedBody) and
    replayed."""
    kind: ClassVar[str] = "cnn_b1"
    levers: ClassVar[tuple[str, ...]] = (CUDA_GRAPHS,)
    needs: ClassVar[tuple[str, ...]] = ("torchvision",)
    about: ClassVar[str] = "resnet18 eval forward at batch 1, 224^2 fp32, eager vs one CUDA graph replayed"
    side: int = 224
    iters: int = 10

    def setup(self):
        from torchvision.models import resnet18

        torch.manual_seed(0)
        side = self.side if self.gpu else 64
        self.model = resnet18(num_classes=1000).to(self.device).eval()
        self.x = torch.randn(1, 3, side, side, device=self.device)
        with torch.inference_mode():
            self.run = GraphedBody(self.body, self.gpu) if self.fix == CUDA_GRAPHS else self.body

    @torch.inference_mode()
    def body(self):
        return self.model(self.x)

    def step(self):
        return self.run()


VISION_SCENARIOS = [DataLoaderCNN, CNNBatch1]
