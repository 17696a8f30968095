"""DGC momentum correction on the torch front: declare each parameter's optimizer to the core, step what it corrected.

With LIGHT_TOPK_ALLREDUCE=1 the core compresses big, multi-dimensional float32 gradients. Under
SGD with momentum, Deep Gradient Compression accumulates the momentum *before* compression
(velocity u = m*u + g, residual v += u, send top-k of v, zero u and v where sent): the
optimizer's own momentum must then stay out of those parameters, or momentum is applied twice.
So the front

1. declares every parameter's optimizer (host or GPU: both executors read declarations) to the core (`topk_declare`): SGD-like with its
   momentum and Nesterov flag, or not (Adam, AdamW, ... keep their own moments: plain error
   feedback), again whenever a parameter group's momentum changes (schedulers cycle it);
2. after each synchronize, asks the core which parameters took a top-k step with momentum
   correction (`topk_progress`), and steps those itself as plain SGD —
   ``p -= lr * (1 - dampening) * (result + weight_decay / (1 - m) * p)`` — hiding their
   gradients from the wrapped optimizer's step. Weight decay is scaled by 1/(1 - m) because
   momentum SGD amplifies it by that factor in steady state; the compressed result already
   carries the momentum of the gradient.

Everything else (dense parameters, non-SGD optimizers) is stepped by the wrapped optimizer
unchanged.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import torch

from lightcc.common.native import core
from lightcc.common.ops import tensor_name
from lightcc.common.process_sets import ProcessSet


def _sgd_like(optimizer: torch.optim.Optimizer) -> bool:
    return isinstance(optimizer, torch.optim.SGD)


class TopkTraining:
    """Per-optimizer bookkeeping of DGC momentum correction (one per DistributedOptimizer)."""

    def __init__(self, optimizer: torch.optim.Optimizer, names: Dict[Any, str], params: List[torch.Tensor],
                 process_set: ProcessSet) -> None:
        self._optimizer = optimizer
        self._set = process_set.process_set_id or 0
        self._names = {p: tensor_name("allreduce", names[p]) for p in params if p in names}
        self._params = [p for p in params if p in self._names]
        self._declared: Dict[int, Tuple[bool, float, bool]] = {}  # per group index
        self._steps: Dict[torch.Tensor, int] = {}
        info = core().fusion_info()
        self.enabled = info.get("topk_threshold_bytes") is not None and bool(self._params)
        if self.enabled:
            self.declare()

    def declare(self) -> None:
        """Tell the core each parameter's optimizer; only groups whose momentum changed are re-declared."""
        if not self.enabled:
            return
        sgd = _sgd_like(self._optimizer)
        mine = set(self._params)
        for i, group in enumerate(self._optimizer.param_groups):
            momentum = float(group.get("momentum", 0.0) or 0.0) if sgd else 0.0
            want = (sgd, momentum, bool(group.get("nesterov", False)) if sgd else False)
            if self._declared.get(i) == want:
                continue
            for p in group["params"]:
                if p in mine:
                    core().topk_declare(self._set, self._names[p], want[0], want[1], want[2])
            self._declared[i] = want

    def corrected(self) -> List[Tuple[torch.Tensor, Dict[str, Any], float]]:
        """(parameter, its group, momentum applied) for each parameter the core momentum-corrected this step."""
        if not self.enabled:
            return []
        out = []
        mine = set(self._params)
        for group in self._optimizer.param_groups:
            for p in group["params"]:
                if p not in mine or p.grad is None:
                    continue
                steps, momentum, _ = core().topk_progress(self._set, self._names[p])
                if steps == self._steps.get(p, 0):
                    continue  # no top-k step since the last look: dense, or not this tensor's step
                self._steps[p] = steps
                if momentum > 0:
                    out.append((p, group, float(momentum)))
        return out

    @staticmethod
    @torch.no_grad()
    def apply(taken: List[Tuple[torch.Tensor, Dict[str, Any], float]]) -> None:
        """Step each corrected parameter by its allreduced result as plain SGD (see the module docstring)."""
        for p, group, m in taken:
            g = p.grad
            if group.get("maximize", False):
                g = -g
            damp = 1.0 - float(group.get("dampening", 0.0)) if float(group.get("momentum", 0.0) or 0.0) > 0 else 1.0
            wd = float(group.get("weight_decay", 0.0) or 0.0)
            update = g * damp if damp != 1.0 else g
            if wd != 0.0:
                update = update + p * (wd * damp / (1.0 - m))
            p.add_(update, alpha=-float(group["lr"]))

    def hide(self, taken: List[Tuple[torch.Tensor, Dict[str, Any], float]]) -> List[Tuple[torch.Tensor, Optional[torch.Tensor]]]:
        """Take the gradients of `taken` away from the wrapped optimizer's step; `restore` gives them back."""
        hidden = []
        for p, _, _ in taken:
            hidden.append((p, p.grad))
            p.grad = None
        return hidden

    @staticmethod
    def restore(hidden: List[Tuple[torch.Tensor, Optional[torch.Tensor]]]) -> None:
        """Put the hidden gradients back (users may read .grad after step())."""
        for p, g in hidden:
            p.grad = g
