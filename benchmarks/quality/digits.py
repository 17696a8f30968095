"""The quality benchmark's task: scikit-learn's 8x8 digits (one fixed split), torch models and data-parallel trainer.

The task behind every run of `python -m benchmarks.quality` (the time-to-accuracy sweep and the
NumPy study) and the top-k convergence test (tests/parallel/test_topk_convergence.py).
scikit-learn ships the data (1,797 images, no download); the split is fixed (stratified 80/20:
1,437 train, 360 test, one test image = 0.28 points) and the same for both fronts: NumPy arrays
(`load_arrays`, `epoch_shard`) and torch tensors (`load_split`). NumPy and torch are imported inside
the functions: this module is importable without them.
"""
from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

TEST_FRACTION = 0.2
SPLIT_SEED = 0
TRAIN_SIZE = 1437  # load_split()'s training images (1,797 less the 360 of the test fifth)


@dataclass
class Recipe:
    """How one run trains: optimizer, learning rate (cosine-decayed per step), epochs, batch per rank."""

    optimizer: str = "sgd"  # sgd (momentum), nesterov, adam, adamw
    lr: float = 0.05
    momentum: float = 0.9
    weight_decay: float = 0.0
    epochs: int = 12
    batch: int = 32
    width: int = 32
    seed: int = 0
    model: str = "cnn"  # cnn (residual_cnn, width = channels) or mlp (wide_mlp, width = hidden units)


@dataclass
class Outcome:
    """What one run ended with, on this rank."""

    accuracy: float  # test accuracy in percent, with this rank's BatchNorm statistics
    loss: float  # mean training loss of the last epoch
    steps: int
    wall_s: float  # training time, evaluation excluded
    digest: str  # sha256 of every parameter's bytes (identical ranks have identical weights)
    curve: List[Dict[str, float]] = field(default_factory=list)  # per epoch: step, wall_s, accuracy, loss


def steps_per_epoch(recipe: "Recipe", size: int) -> int:
    """Optimizer steps in one epoch at `size` ranks (a partial last batch is dropped)."""
    return TRAIN_SIZE // (recipe.batch * size)


def load_arrays() -> Tuple[Any, Any, Any, Any]:
    """(x_train, y_train, x_test, y_test) as NumPy arrays: features N x 64 float32 in [0, 1], labels int64."""
    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=TEST_FRACTION, random_state=SPLIT_SEED, stratify=y)
    return xtr, ytr, xte, yte


def epoch_shard(n: int, epoch: int, seed: int, rank: int, size: int) -> Any:
    """This rank's sample indices (NumPy) for one epoch: a shared permutation, every size-th element from rank."""
    import numpy as np

    perm = np.random.default_rng([seed, epoch]).permutation(n)
    per_rank = n // size
    return perm[rank : per_rank * size : size]


def load_split() -> Tuple[Any, Any, Any, Any]:
    """(x_train, y_train, x_test, y_test) as torch tensors; images N x 1 x 8 x 8 scaled to [0, 1]."""
    import torch

    xtr, ytr, xte, yte = load_arrays()
    return (torch.from_numpy(xtr.reshape(-1, 1, 8, 8)), torch.from_numpy(ytr),
            torch.from_numpy(xte.reshape(-1, 1, 8, 8)), torch.from_numpy(yte))


def residual_cnn(width: int, seed: int) -> Any:
    """conv 3x3 (1 -> width) + BN, one residual block (two 3x3 convs + BN), 2x2 average pool, linear.

    With width 32 the block's convs hold 9,216 weights (36 KiB) each and the linear layer 5,120
    (20 KiB); the stem conv 288 (1.1 KiB); BatchNorm scales and shifts and the linear bias are 1-D.
    """
    import torch
    from torch import nn

    class ResidualCNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Conv2d(1, width, 3, padding=1, bias=False)
            self.bn0 = nn.BatchNorm2d(width)
            self.conv1 = nn.Conv2d(width, width, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(width)
            self.fc = nn.Linear(width * 16, 10)

        def forward(self, x: Any) -> Any:
            x = torch.relu(self.bn0(self.stem(x)))
            y = torch.relu(self.bn1(self.conv1(x)))
            x = torch.relu(x + self.bn2(self.conv2(y)))
            return self.fc(torch.flatten(nn.functional.avg_pool2d(x, 2), 1))

    torch.manual_seed(seed)
    return ResidualCNN()


def wide_mlp(width: int, seed: int) -> Any:
    """64 -> width -> width -> width -> 10, ReLU: a model whose gradient is large enough for the link to matter.

    With width 1024 it holds 2.17 M weights, 8.3 MiB of float32 gradient a step, against a step's
    compute of tens of milliseconds: at 1 Gbit/s a dense exchange dominates the step, unshaped it
    does not. Every weight matrix is 2-D (compressed by top-k); the biases are 1-D.
    """
    import torch
    from torch import nn

    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(64, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))


def make_model(recipe: "Recipe") -> Any:
    """The recipe's model: the residual CNN (default) or the wide MLP."""
    if recipe.model == "cnn":
        return residual_cnn(recipe.width, recipe.seed)
    if recipe.model == "mlp":
        return wide_mlp(recipe.width, recipe.seed)
    raise ValueError(f"unknown model {recipe.model!r}: cnn or mlp")


def make_optimizer(recipe: Recipe, params: Any) -> Any:
    """The wrapped optimizer of a recipe (before lightcc's DistributedOptimizer)."""
    import torch

    if recipe.optimizer in ("sgd", "nesterov"):
        return torch.optim.SGD(params, lr=recipe.lr, momentum=recipe.momentum, nesterov=recipe.optimizer == "nesterov",
                               weight_decay=recipe.weight_decay)
    if recipe.optimizer == "adam":
        return torch.optim.Adam(params, lr=recipe.lr, weight_decay=recipe.weight_decay)
    if recipe.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=recipe.lr, weight_decay=recipe.weight_decay)
    raise ValueError(f"unknown optimizer {recipe.optimizer!r}: sgd, nesterov, adam or adamw")


def param_digest(model: Any) -> str:
    """sha256 over every parameter's bytes, in order."""
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def accuracy(model: Any, x: Any, y: Any) -> float:
    """Test accuracy in percent (eval mode, this rank's BatchNorm running statistics)."""
    import torch

    model.eval()
    with torch.no_grad():
        hits = (model(x).argmax(1) == y).sum().item()
    model.train()
    return 100.0 * hits / len(y)


class Trainer:
    """Data-parallel training of the recipe's model on this rank's shard of each epoch (lightcc initialized)."""

    def __init__(self, recipe: Recipe, hvd: Any, compression: Any = None) -> None:
        import torch

        self.recipe, self.hvd = recipe, hvd
        self.rank, self.size = hvd.rank(), hvd.size()
        self.xtr, self.ytr, self.xte, self.yte = load_split()
        self.model = make_model(recipe)
        base = make_optimizer(recipe, self.model.parameters())
        extra = {} if compression is None else {"compression": compression}
        self.opt = hvd.DistributedOptimizer(base, named_parameters=self.model.named_parameters(), **extra)
        self.per_step = recipe.batch * self.size
        self.steps_per_epoch = len(self.ytr) // self.per_step
        self.total = self.steps_per_epoch * recipe.epochs
        self.step_count = 0
        self._loss = torch.nn.CrossEntropyLoss()

    def _lr(self) -> float:
        return self.recipe.lr * 0.5 * (1.0 + math.cos(math.pi * self.step_count / max(1, self.total)))

    def epoch(self, epoch: int, until: Optional[int] = None) -> float:
        """One epoch (or up to global step `until`); returns the mean training loss."""
        import torch

        perm = torch.randperm(len(self.ytr), generator=torch.Generator().manual_seed(1000 * self.recipe.seed + epoch))
        losses = []
        for s in range(self.steps_per_epoch):
            if until is not None and self.step_count >= until:
                break
            idx = perm[(s * self.size + self.rank) * self.recipe.batch:(s * self.size + self.rank + 1) * self.recipe.batch]
            for g in self.opt.param_groups:
                g["lr"] = self._lr()
            self.opt.zero_grad()
            loss = self._loss(self.model(self.xtr[idx]), self.ytr[idx])
            loss.backward()
            self.opt.step()
            self.step_count += 1
            losses.append(loss.item())
        return sum(losses) / max(1, len(losses))

    def run(self, on_epoch: Optional[Callable[[int, float], bool]] = None) -> Outcome:
        """Every epoch; `on_epoch(epoch, accuracy)` returning True stops early (time to accuracy)."""
        train_s = 0.0  # training only: the per-epoch evaluation is not part of time to accuracy
        curve: List[Dict[str, float]] = []
        loss = float("nan")
        for e in range(self.recipe.epochs):
            t0 = time.perf_counter()
            loss = self.epoch(e)
            train_s += time.perf_counter() - t0
            acc = accuracy(self.model, self.xte, self.yte)
            curve.append({"epoch": e + 1, "step": self.step_count, "wall_s": train_s, "accuracy": acc, "loss": loss})
            if on_epoch is not None and on_epoch(e, acc):
                break
        return Outcome(accuracy(self.model, self.xte, self.yte), loss, self.step_count, train_s,
                       param_digest(self.model), curve)
