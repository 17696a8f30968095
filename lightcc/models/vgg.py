"""VGG-16 (configuration D, no batch norm) from torch.nn layers only."""
from __future__ import annotations

import torch
from torch import nn

# Output channels of each 3x3 conv; "M" is a 2x2 max pool.
_CFG_D = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]


class VGG(nn.Module):
    """Conv stack, 7x7 adaptive pool, three fully connected layers with dropout."""

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        layers, ch = [], 3
        for v in _CFG_D:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(ch, int(v), 3, padding=1), nn.ReLU(inplace=True)]
                ch = int(v)
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(inplace=True), nn.Dropout(),
            nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


def vgg16(num_classes: int = 1000) -> VGG:
    """VGG-16: 13 convs and 3 FC layers, 138.4M parameters."""
    return VGG(num_classes)
