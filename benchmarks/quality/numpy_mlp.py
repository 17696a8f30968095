"""A multilayer perceptron in NumPy (ReLU hidden layers, softmax cross-entropy) with hand-written backprop."""

from __future__ import annotations

from typing import Sequence

import numpy as np


class MLP:
    """Dense layers `sizes[0] -> ... -> sizes[-1]`; parameters named w0, b0, w1, b1, ... in layer order."""

    def __init__(self, sizes: Sequence[int], seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.params: dict[str, np.ndarray] = {}
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            self.params[f"w{i}"] = (rng.standard_normal((a, b)) * np.sqrt(2.0 / a)).astype(np.float32)
            self.params[f"b{i}"] = np.zeros(b, dtype=np.float32)
        self.layers = len(sizes) - 1

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """Logits and the activations backprop needs (the input of every layer)."""
        acts = [x]
        h = x
        for i in range(self.layers):
            h = h @ self.params[f"w{i}"] + self.params[f"b{i}"]
            if i < self.layers - 1:
                h = np.maximum(h, 0.0)
                acts.append(h)
        return h, acts

    def loss_and_grads(self, x: np.ndarray, y: np.ndarray) -> tuple[float, dict[str, np.ndarray]]:
        """Mean cross-entropy over the batch and its gradient for every parameter."""
        logits, acts = self.forward(x)
        z = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        n = x.shape[0]
        loss = float(-np.log(p[np.arange(n), y] + 1e-12).mean())
        d = p
        d[np.arange(n), y] -= 1.0
        d /= n
        grads: dict[str, np.ndarray] = {}
        for i in reversed(range(self.layers)):
            grads[f"w{i}"] = np.ascontiguousarray(acts[i].T @ d, dtype=np.float32)
            grads[f"b{i}"] = d.sum(axis=0).astype(np.float32)
            if i > 0:
                d = (d @ self.params[f"w{i}"].T) * (acts[i] > 0)
        return loss, grads

    def accuracy(self, x: np.ndarray, y: np.ndarray) -> float:
        """Fraction of `x` classified as `y`."""
        logits, _ = self.forward(x)
        return float((logits.argmax(axis=1) == y).mean())
