"""Benchmark models built from torch.nn only (no torchvision): a registry with inputs and published sizes."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class ModelSpec:
    """How to build a model, feed it synthetic data and score it."""

    name: str
    build: Callable[[], torch.nn.Module]
    kind: str                   # "image" (N, 3, S, S) or "vector" (N, S) -> logits; "lm" (T, B) tokens -> loss
    input_size: int             # image side, features per sample, or tokens per sequence
    published_millions: float   # the parameter count usually quoted for the architecture
    vocab: int = 0


def _resnet50() -> torch.nn.Module:
    from lightcc.models.resnet import resnet50
    return resnet50()


def _resnet101() -> torch.nn.Module:
    from lightcc.models.resnet import resnet101
    return resnet101()


def _vgg16() -> torch.nn.Module:
    from lightcc.models.vgg import vgg16
    return vgg16()


def _inception() -> torch.nn.Module:
    from lightcc.models.inception import inception_v3
    return inception_v3()


def _mlp25m() -> torch.nn.Module:
    # 1024 -> 4096 -> 4096 -> 1000: 25.1 M parameters in three large GEMMs, so a step is one
    # core's arithmetic and communication has nowhere to hide (the DDP benchmark's model).
    return torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096),
                               torch.nn.ReLU(), torch.nn.Linear(4096, 1000))


def _txl() -> torch.nn.Module:
    from lightcc.models.transformer_xl import transformer_xl_large
    return transformer_xl_large()


MODELS: Dict[str, ModelSpec] = {
    "mlp25m": ModelSpec("mlp25m", _mlp25m, "vector", 1024, 25.1),
    "resnet50": ModelSpec("resnet50", _resnet50, "image", 224, 25.6),
    "resnet101": ModelSpec("resnet101", _resnet101, "image", 224, 44.5),
    "vgg16": ModelSpec("vgg16", _vgg16, "image", 224, 138.4),
    "inception_v3": ModelSpec("inception_v3", _inception, "image", 299, 27.2),
    "transformer_xl": ModelSpec("transformer_xl", _txl, "lm", 128, 257.0, vocab=267735),
}


def get(name: str) -> ModelSpec:
    """The spec of a model by name; ValueError listing the known names."""
    try:
        return MODELS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(MODELS)}") from None


def count_parameters(model: torch.nn.Module) -> int:
    """Number of distinct parameter elements (tied parameters counted once)."""
    return sum(p.numel() for p in model.parameters())


def synthetic_batch(spec: ModelSpec, batch_size: int, seed: int = 0) -> Tuple[torch.Tensor, torch.Tensor]:
    """Random inputs and targets of the right shapes (images and 1000 classes, or token sequences)."""
    g = torch.Generator().manual_seed(seed)
    if spec.kind == "image":
        data = torch.randn(batch_size, 3, spec.input_size, spec.input_size, generator=g)
        return data, torch.randint(0, 1000, (batch_size,), generator=g)
    if spec.kind == "vector":
        return torch.randn(batch_size, spec.input_size, generator=g), torch.randint(0, 1000, (batch_size,), generator=g)
    tokens = torch.randint(0, spec.vocab, (spec.input_size + 1, batch_size), generator=g)
    return tokens[:-1].contiguous(), tokens[1:].contiguous()


class Trainer:
    """Runs forward + loss for any registered model (keeps Transformer-XL's memory between steps)."""

    def __init__(self, spec: ModelSpec, model: torch.nn.Module) -> None:
        self.spec, self.model = spec, model
        self.mems: Optional[List[torch.Tensor]] = None

    def loss(self, data: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        if self.spec.kind == "lm":
            loss, self.mems = self.model(data, target, self.mems)
            return loss
        out: Any = self.model(data)
        if isinstance(out, tuple):  # Inception's auxiliary head
            return F.cross_entropy(out[0], target) + 0.4 * F.cross_entropy(out[1], target)
        return F.cross_entropy(out, target)
