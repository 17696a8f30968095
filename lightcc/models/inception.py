"""Inception-v3 (with its auxiliary classifier, 27.2M parameters) from torch.nn layers only; input 299x299."""
from __future__ import annotations

from typing import List, Tuple, Union

import torch
import torch.nn.functional as F
from torch import nn


class Conv(nn.Module):
    """Conv (no bias) -> BatchNorm (eps 1e-3) -> ReLU: the unit every Inception branch is made of."""

    def __init__(self, in_ch: int, out_ch: int, kernel: Union[int, Tuple[int, int]], stride: int = 1,
                 padding: Union[int, Tuple[int, int]] = 0) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, kernel, stride=stride, padding=padding, bias=False)
        self.bn = nn.BatchNorm2d(out_ch, eps=0.001)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.bn(self.conv(x)), inplace=True)


def _chain(*mods: nn.Module) -> nn.Sequential:
    return nn.Sequential(*mods)


class _Block(nn.Module):
    """Runs branches side by side and concatenates them on channels; pool branches are (kind, conv)."""

    branches: nn.ModuleList
    pools: List[str]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outs = []
        for kind, branch in zip(self.pools, self.branches):
            if kind == "avg":
                outs.append(branch(F.avg_pool2d(x, 3, stride=1, padding=1)))
            elif kind == "max":
                outs.append(F.max_pool2d(x, 3, stride=2))
            else:
                outs.append(branch(x))
        return torch.cat(outs, 1)


class InceptionA(_Block):
    """35x35 block: 1x1, 5x5, double 3x3, pooled 1x1."""

    def __init__(self, in_ch: int, pool_features: int) -> None:
        super().__init__()
        self.branches = nn.ModuleList([
            Conv(in_ch, 64, 1),
            _chain(Conv(in_ch, 48, 1), Conv(48, 64, 5, padding=2)),
            _chain(Conv(in_ch, 64, 1), Conv(64, 96, 3, padding=1), Conv(96, 96, 3, padding=1)),
            Conv(in_ch, pool_features, 1),
        ])
        self.pools = ["", "", "", "avg"]


class InceptionB(_Block):
    """35 -> 17 grid reduction: strided 3x3, strided double 3x3, max pool."""

    def __init__(self, in_ch: int) -> None:
        super().__init__()
        self.branches = nn.ModuleList([
            Conv(in_ch, 384, 3, stride=2),
            _chain(Conv(in_ch, 64, 1), Conv(64, 96, 3, padding=1), Conv(96, 96, 3, stride=2)),
            nn.Identity(),
        ])
        self.pools = ["", "", "max"]


class InceptionC(_Block):
    """17x17 block with factorised 7x7 convolutions (1x7 then 7x1)."""

    def __init__(self, in_ch: int, c7: int) -> None:
        super().__init__()
        row, col = (1, 7), (7, 1)
        self.branches = nn.ModuleList([
            Conv(in_ch, 192, 1),
            _chain(Conv(in_ch, c7, 1), Conv(c7, c7, row, padding=(0, 3)), Conv(c7, 192, col, padding=(3, 0))),
            _chain(Conv(in_ch, c7, 1), Conv(c7, c7, col, padding=(3, 0)), Conv(c7, c7, row, padding=(0, 3)),
                   Conv(c7, c7, col, padding=(3, 0)), Conv(c7, 192, row, padding=(0, 3))),
            Conv(in_ch, 192, 1),
        ])
        self.pools = ["", "", "", "avg"]


class InceptionD(_Block):
    """17 -> 8 grid reduction."""

    def __init__(self, in_ch: int) -> None:
        super().__init__()
        self.branches = nn.ModuleList([
            _chain(Conv(in_ch, 192, 1), Conv(192, 320, 3, stride=2)),
            _chain(Conv(in_ch, 192, 1), Conv(192, 192, (1, 7), padding=(0, 3)), Conv(192, 192, (7, 1), padding=(3, 0)),
                   Conv(192, 192, 3, stride=2)),
            nn.Identity(),
        ])
        self.pools = ["", "", "max"]


class _Split(nn.Module):
    """A stem conv followed by parallel 1x3 and 3x1 convs, concatenated."""

    def __init__(self, stem: nn.Module, ch: int) -> None:
        super().__init__()
        self.stem = stem
        self.a = Conv(ch, 384, (1, 3), padding=(0, 1))
        self.b = Conv(ch, 384, (3, 1), padding=(1, 0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        return torch.cat([self.a(x), self.b(x)], 1)


class InceptionE(_Block):
    """8x8 block with expanded filter banks."""

    def __init__(self, in_ch: int) -> None:
        super().__init__()
        self.branches = nn.ModuleList([
            Conv(in_ch, 320, 1),
            _Split(Conv(in_ch, 384, 1), 384),
            _Split(_chain(Conv(in_ch, 448, 1), Conv(448, 384, 3, padding=1)), 384),
            Conv(in_ch, 192, 1),
        ])
        self.pools = ["", "", "", "avg"]


class InceptionAux(nn.Module):
    """Auxiliary classifier on the 17x17 grid (used in training)."""

    def __init__(self, in_ch: int, num_classes: int) -> None:
        super().__init__()
        self.conv0 = Conv(in_ch, 128, 1)
        self.conv1 = Conv(128, 768, 5)
        self.fc = nn.Linear(768, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv1(self.conv0(F.avg_pool2d(x, 5, stride=3)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class InceptionV3(nn.Module):
    """Inception-v3; in training with aux_logits, forward returns (logits, aux_logits)."""

    def __init__(self, num_classes: int = 1000, aux_logits: bool = True) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            Conv(3, 32, 3, stride=2), Conv(32, 32, 3), Conv(32, 64, 3, padding=1), nn.MaxPool2d(3, stride=2),
            Conv(64, 80, 1), Conv(80, 192, 3), nn.MaxPool2d(3, stride=2),
        )
        self.mixed_5_6 = nn.Sequential(
            InceptionA(192, 32), InceptionA(256, 64), InceptionA(288, 64), InceptionB(288),
            InceptionC(768, 128), InceptionC(768, 160), InceptionC(768, 160), InceptionC(768, 192),
        )
        self.aux = InceptionAux(768, num_classes) if aux_logits else None
        self.mixed_7 = nn.Sequential(InceptionD(768), InceptionE(1280), InceptionE(2048))
        self.dropout = nn.Dropout(0.5)
        self.fc = nn.Linear(2048, num_classes)

    def forward(self, x: torch.Tensor) -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
        x = self.mixed_5_6(self.stem(x))
        aux = self.aux(x) if self.aux is not None and self.training else None
        x = self.mixed_7(x)
        logits = self.fc(self.dropout(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)))
        return (logits, aux) if aux is not None else logits


def inception_v3(num_classes: int = 1000) -> InceptionV3:
    """Inception-v3 with the auxiliary classifier: 27.2M parameters (23.8M without it)."""
    return InceptionV3(num_classes)
