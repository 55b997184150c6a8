"""A small ResNet for the example trainer: three stages of basic residual blocks, width and depth configurable."""
from __future__ import annotations

from torch import nn


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a shortcut; a 1x1 projection when the shape changes."""

    def __init__(self, in_channels: int, out_channels: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.shortcut = nn.Identity()
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    """Stem, then stages of ``depth`` blocks with ``width``, 2x, 4x channels, then pooling and a classifier."""

    def __init__(self, classes: int, width: int = 32, depth: int = 2, stages: int = 3):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 3, 1, 1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
        )
        layers = []
        channels = width
        for stage in range(stages):
            out_channels = width * 2 ** stage
            for block in range(depth):
                stride = 2 if stage > 0 and block == 0 else 1
                layers.append(BasicBlock(channels, out_channels, stride))
                channels = out_channels
        self.blocks = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, classes)
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
        # Zero the last BN of each block so every block starts as the identity (trains faster).
        for module in self.modules():
            if isinstance(module, BasicBlock):
                nn.init.zeros_(module.bn2.weight)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(self.pool(x).flatten(1))
