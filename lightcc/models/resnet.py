"""ResNet-50/101 (bottleneck ResNet v1.5, stride on the 3x3 conv) from torch.nn layers only."""
from __future__ import annotations

from typing import List, Optional

import torch
from torch import nn


class Bottleneck(nn.Module):
    """1x1 reduce -> 3x3 (carries the stride) -> 1x1 expand (x4), plus the shortcut."""

    expansion = 4

    def __init__(self, in_ch: int, width: int, stride: int = 1, downsample: Optional[nn.Module] = None) -> None:
        super().__init__()
        out_ch = width * self.expansion
        self.conv1 = nn.Conv2d(in_ch, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out_ch, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_ch)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """Stem (7x7/2 conv, 3x3/2 max pool), four bottleneck stages, global pool, classifier."""

    def __init__(self, layers: List[int], num_classes: int = 1000) -> None:
        super().__init__()
        self.in_ch = 64
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = self._stage(64, layers[0], 1)
        self.layer2 = self._stage(128, layers[1], 2)
        self.layer3 = self._stage(256, layers[2], 2)
        self.layer4 = self._stage(512, layers[3], 2)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512 * Bottleneck.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def _stage(self, width: int, blocks: int, stride: int) -> nn.Sequential:
        out_ch = width * Bottleneck.expansion
        down = None
        if stride != 1 or self.in_ch != out_ch:
            down = nn.Sequential(nn.Conv2d(self.in_ch, out_ch, 1, stride=stride, bias=False), nn.BatchNorm2d(out_ch))
        mods = [Bottleneck(self.in_ch, width, stride, down)]
        self.in_ch = out_ch
        mods += [Bottleneck(out_ch, width) for _ in range(blocks - 1)]
        return nn.Sequential(*mods)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet50(num_classes: int = 1000) -> ResNet:
    """ResNet-50: 3-4-6-3 bottlenecks, 25.6M parameters."""
    return ResNet([3, 4, 6, 3], num_classes)


def resnet101(num_classes: int = 1000) -> ResNet:
    """ResNet-101: 3-4-23-3 bottlenecks, 44.5M parameters."""
    return ResNet([3, 4, 23, 3], num_classes)
