"""The digits data set shipped with scikit-learn (8x8 images, 10 classes): fixed split, scaled, sharded."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TEST_FRACTION = 0.2
SPLIT_SEED = 0


@dataclass
class Split:
    """Train and test arrays: features float32 in [0, 1], labels int64."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


def load() -> Split:
    """1,797 digits, a stratified 80/20 split that is the same for every run and rank."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=TEST_FRACTION, random_state=SPLIT_SEED, stratify=y)
    return Split(xtr, ytr, xte, yte)


def epoch_shard(n: int, epoch: int, seed: int, rank: int, size: int) -> np.ndarray:
    """This rank's sample indices for one epoch: a shared permutation, every size-th element from rank."""
    perm = np.random.default_rng([seed, epoch]).permutation(n)
    per_rank = n // size
    return perm[rank : per_rank * size : size]
