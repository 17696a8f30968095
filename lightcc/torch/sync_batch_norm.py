"""SyncBatchNorm: batch normalisation over the whole distributed batch, on CPU and GPU alike.

In training, each rank computes its batch's per-channel count, mean and sum of squared
deviations (stable two-pass statistics), and one Sum allreduce in float64 combines them into
the global mean and variance. The allreduce is the differentiable one of lightcc.torch, whose
gradient is the allreduce of the gradient, so backward gets the exact cross-rank gradient from
autograd without a hand-written kernel.
"""
from __future__ import annotations

import itertools
from typing import Optional

import torch
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm

from lightcc.common.ops import Sum
from lightcc.common.process_sets import ProcessSet, global_process_set

_instances = itertools.count()


class SyncBatchNorm(_BatchNorm):
    """Drop-in for torch.nn.BatchNorm{1,2,3}d whose training statistics span every rank of a process set.

    Instances must be created in the same order on every rank (they are named by creation
    order) and every rank must run forward and backward through them alike.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: Optional[float] = 0.1, affine: bool = True,
                 track_running_stats: bool = True, process_set: ProcessSet = global_process_set) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        self.process_set = process_set
        # Sync calls finish before they return, so one name per instance never collides in flight,
        # and reusing it lets the engine's response cache skip negotiation.
        self._lightcc_name = f"sync_batch_norm.{next(_instances)}"

    def _check_input_dim(self, input: torch.Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _average_factor(self) -> float:
        if not (self.training and self.track_running_stats):
            return 0.0
        self.num_batches_tracked.add_(1)
        if self.momentum is None:
            return 1.0 / float(self.num_batches_tracked)
        return float(self.momentum)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        self._check_input_dim(input)
        factor = self._average_factor()
        batch_stats = self.training or self.running_mean is None
        if not batch_stats or not self.process_set.included() or self.process_set.size() == 1:
            return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                                batch_stats, factor, self.eps)
        mean, var, count = self._global_stats(input)
        if self.training and self.running_mean is not None:
            with torch.no_grad():
                unbiased = var * (count / max(count - 1.0, 1.0))
                self.running_mean.mul_(1 - factor).add_(mean.to(self.running_mean.dtype), alpha=factor)
                self.running_var.mul_(1 - factor).add_(unbiased.to(self.running_var.dtype), alpha=factor)
        shape = [1, -1] + [1] * (input.dim() - 2)
        inv = torch.rsqrt(var + self.eps).to(input.dtype)
        out = (input - mean.to(input.dtype).view(shape)) * inv.view(shape)
        if self.weight is not None:
            out = out * self.weight.view(shape) + self.bias.view(shape)
        return out

    def _global_stats(self, input: torch.Tensor) -> tuple:
        from lightcc.torch.mpi_ops import allreduce

        c = input.shape[1]
        dims = [0] + list(range(2, input.dim()))
        n = input.numel() // c if c else 0
        if n > 0:
            var, mean = torch.var_mean(input.float() if input.dtype in (torch.float16, torch.bfloat16) else input,
                                       dim=dims, unbiased=False)
            mean, m2 = mean.double(), var.double() * n
        else:
            mean = m2 = torch.zeros(c, dtype=torch.float64, device=input.device)
        local = torch.cat([torch.full((1,), float(n), dtype=torch.float64, device=input.device),
                           mean * n, m2 + n * mean * mean])
        total = allreduce(local, name=self._lightcc_name, op=Sum, process_set=self.process_set)
        count = float(total[0].detach())
        if count == 0:
            raise ValueError("SyncBatchNorm got an empty batch on every rank")
        g_mean = total[1:1 + c] / count
        g_var = (total[1 + c:] / count - g_mean * g_mean).clamp_min(0.0)
        return g_mean, g_var, count
