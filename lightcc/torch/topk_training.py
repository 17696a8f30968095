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

Adam and AdamW (without amsgrad or maximize) compress their update instead of the gradient.
Top-k of the raw gradient starves Adam: its per-element step size turns the few coordinates a
step touches into rare large moves whose squares then sit in its second moment for ~1/(1-beta2)
steps (0.1 % ended 1.7 points below dense on digits). So for each compressed parameter the front
runs Adam's moments on this rank's own gradient (m, v in the optimizer's `exp_avg`,
`exp_avg_sq`, `step`, so checkpoints carry them), submits Adam's update m_hat / (sqrt(v_hat) + eps)
in place of the gradient (plain error feedback keeps what top-k did not send), and steps the
averaged result as ``p -= lr * result`` (AdamW: after its decoupled decay; Adam's L2 decay joins the
gradient first). The moments differ between ranks, the applied result does not: weights stay
identical. This is the update compressed after the optimizer's moments, as in 1-bit Adam, without
its frozen variance.

Everything else (dense parameters, other optimizers) is stepped by the wrapped optimizer
unchanged.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import torch

from lightcc.common.native import core
from lightcc.common.ops import tensor_name
from lightcc.common.process_sets import ProcessSet


@torch.no_grad()
def sgd_step_corrected(p: torch.Tensor, group: Dict[str, Any], momentum: float) -> None:
    """One plain SGD step of `p` by its gradient, which already carries `momentum` (DGC's correction):
    ``p -= lr * (1 - dampening) * (grad + weight_decay / (1 - momentum) * p)``, the group's maximize
    honoured. The one copy of this step: DistributedOptimizer's (`apply`) and topk_hook's both call it."""
    g = -p.grad if group.get("maximize", False) else p.grad
    damp = 1.0 - float(group.get("dampening", 0.0) or 0.0) if float(group.get("momentum", 0.0) or 0.0) > 0 else 1.0
    wd = float(group.get("weight_decay", 0.0) or 0.0)
    update = g * damp if damp != 1.0 else g
    if wd != 0.0:  # momentum SGD amplifies weight decay by 1/(1 - m) in steady state
        update = update + p * (wd * damp / (1.0 - momentum))
    p.add_(update, alpha=-float(group["lr"]))


def _sgd_like(optimizer: torch.optim.Optimizer) -> bool:
    return isinstance(optimizer, torch.optim.SGD)


def _adam_like(optimizer: torch.optim.Optimizer) -> bool:
    """Adam or AdamW whose update the front can compute itself (amsgrad and maximize excluded)."""
    if not isinstance(optimizer, (torch.optim.Adam, torch.optim.AdamW)):
        return False
    return not any(g.get("amsgrad", False) or g.get("maximize", False) for g in optimizer.param_groups)


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
        self._adam = self.enabled and _adam_like(optimizer)
        self._threshold = int(info.get("topk_threshold_bytes") or 0)
        self._min_dims = int(info.get("topk_min_dims", 2))
        self._mine = set(self._params)
        self._group_of = {p: g for g in optimizer.param_groups for p in g["params"]}
        self._updates: List[torch.Tensor] = []  # parameters whose Adam update was submitted this step
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

    def adam_update(self, p: torch.Tensor, grad: torch.Tensor) -> None:
        """Adam/AdamW: advance p's moments with this rank's gradient and replace `grad` (in place) by Adam's
        update, for the parameters the core compresses (see the module docstring); others untouched."""
        if not self._adam or p not in self._mine or p.dim() < self._min_dims or grad.dtype != torch.float32:
            return
        if p.numel() * p.element_size() < self._threshold:
            return
        group = self._group_of[p]
        beta1, beta2 = (float(b) for b in group["betas"])
        state = self._optimizer.state[p]
        if len(state) == 0:  # Adam's own layout: its state_dict (and so checkpoints) carries the moments
            state["step"] = torch.zeros((), dtype=torch.float32)
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        with torch.no_grad():
            wd = float(group.get("weight_decay", 0.0) or 0.0)
            if wd != 0.0 and not isinstance(self._optimizer, torch.optim.AdamW):
                grad.add_(p, alpha=wd)  # Adam's L2 decay is part of the gradient
            state["step"] += 1
            t = float(state["step"])
            state["exp_avg"].mul_(beta1).add_(grad, alpha=1.0 - beta1)
            state["exp_avg_sq"].mul_(beta2).addcmul_(grad, grad, value=1.0 - beta2)
            denom = (state["exp_avg_sq"] / (1.0 - beta2 ** t)).sqrt_().add_(float(group["eps"]))
            grad.copy_(state["exp_avg"]).div_(1.0 - beta1 ** t).div_(denom)
        self._updates.append(p)

    def corrected(self) -> List[Tuple[torch.Tensor, Dict[str, Any], float]]:
        """(parameter, its group, momentum applied) for each parameter the front steps itself this step:
        those the core momentum-corrected (SGD), or whose Adam update was submitted (Adam, AdamW)."""
        if not self.enabled:
            return []
        if self._adam:  # Adam: every parameter whose update was submitted, whether sent sparse or dense
            out = [(p, self._group_of[p], 0.0) for p in self._updates if p.grad is not None]
            self._updates = []
            return out
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

    @torch.no_grad()
    def apply(self, taken: List[Tuple[torch.Tensor, Dict[str, Any], float]]) -> None:
        """Step each corrected parameter by its allreduced result (see the module docstring)."""
        for p, group, m in taken:
            if self._adam:  # the result is the ranks' mean Adam update
                lr = float(group["lr"])
                if isinstance(self._optimizer, torch.optim.AdamW):
                    p.mul_(1.0 - lr * float(group.get("weight_decay", 0.0) or 0.0))
                p.add_(p.grad, alpha=-lr)
                continue
            sgd_step_corrected(p, group, m)

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
