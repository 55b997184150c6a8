"""A generated image-classification dataset and a sampler that can resume in the middle of an epoch.

No downloads: every image is computed from its index. Each class is an oriented colour grating
with its own angle, frequency and colour; each image jitters those, shifts the phase and adds
noise, so the task is learnable but not trivial. Image ``i`` is the same in every process, worker
and run, which is what makes a resumed run see exactly the batches an uninterrupted one would.
"""
from __future__ import annotations

import itertools
import math

import torch
from torch.utils.data import Dataset
from torch.utils.data.distributed import DistributedSampler


class SyntheticImages(Dataset):
    """``size`` images of ``3 x image_size x image_size`` in ``classes`` classes."""

    def __init__(self, size: int, image_size: int, classes: int, seed: int = 0, noise: float = 0.5):
        self.size = size
        self.image_size = image_size
        self.classes = classes
        self.seed = seed
        self.noise = noise
        g = torch.Generator().manual_seed(seed)
        # Class prototypes: spread the angles evenly so classes differ, jitter the rest.
        self.angles = torch.arange(classes) * (math.pi / classes) + torch.rand(classes, generator=g) * 0.2
        self.freqs = 2.0 + torch.rand(classes, generator=g) * 6.0
        self.colors = torch.rand(classes, 3, generator=g) * 2.0 - 1.0
        axis = torch.linspace(-math.pi, math.pi, image_size)
        self.yy, self.xx = torch.meshgrid(axis, axis, indexing="ij")

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        if not 0 <= index < self.size:
            raise IndexError(index)
        # One generator per image, seeded by the image's index: no shared RNG state between
        # workers, so the worker count and the resume point cannot change the data.
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + index)
        label = int(torch.randint(self.classes, (1,), generator=g))
        jitter = torch.randn(3, generator=g)
        angle = self.angles[label] + 0.15 * jitter[0]
        freq = self.freqs[label] * (1.0 + 0.1 * jitter[1])
        phase = torch.rand(1, generator=g) * 2 * math.pi
        wave = torch.cos(freq * (self.xx * torch.cos(angle) + self.yy * torch.sin(angle)) + phase)
        image = wave.unsqueeze(0) * self.colors[label].view(3, 1, 1) * (1.0 + 0.2 * jitter[2])
        image = image + self.noise * torch.randn(image.shape, generator=g)
        return image, label


class ResumableDistributedSampler(DistributedSampler):
    """DistributedSampler that can start at a sample offset inside the current epoch.

    The order of an epoch depends only on (seed, epoch), as in DistributedSampler, so skipping
    the samples already trained on reproduces the rest of the interrupted epoch exactly.
    """

    def __init__(self, dataset: Dataset, num_replicas: int, rank: int, seed: int = 0):
        super().__init__(dataset, num_replicas=num_replicas, rank=rank, shuffle=True, seed=seed,
                         drop_last=True)
        self.start = 0

    def set_start(self, start: int) -> None:
        self.start = start

    def __iter__(self):
        return itertools.islice(super().__iter__(), self.start, None)

    def __len__(self) -> int:
        return max(0, super().__len__() - self.start)
