"""DistributedOptimizer with op=Adasum: each rank steps locally, the model deltas are Adasum-combined.

Horovod's semantics (its "delta optimizer"). When a parameter's gradient is ready (after
`backward_passes_per_step` backward passes) its hook copies the parameter to a start buffer,
runs the user's optimizer step on that parameter alone, turns the parameter into the delta
(new - start) and starts an in-place Adasum allreduce of it. `step()` waits for every delta,
adds the combined delta to the start and writes it back into the parameter. Adasum adapts the
combination to the deltas' directions, so the learning rate is not scaled by the number of ranks.
`synchronize()` does nothing and `skip_synchronize()` is refused, as in Horovod.
"""
from __future__ import annotations

import contextlib
from typing import Any, Dict, Iterator, List, Optional, Tuple

import torch

from lightcc.common.ops import Adasum
from lightcc.torch import mpi_ops as M


class _AdasumOptimizer(torch.optim.Optimizer):
    """Methods mixed into a class made on the fly from the user's optimizer class."""

    _lightcc_base: type

    def _lightcc_setup(self, names: Dict[Any, str], compression: Any, backward_passes_per_step: int) -> None:
        self._compression = compression
        self._parameter_names = names
        self.backward_passes_per_step = backward_passes_per_step
        params = [p for g in self.param_groups for p in g["params"]]
        self._allreduce_delay = {p: backward_passes_per_step for p in params}
        self._handles: Dict[torch.Tensor, Tuple[Optional[int], Any]] = {}
        self._starting_models = {p: torch.zeros_like(p, requires_grad=False) for p in params}
        self._requires_update: List[torch.Tensor] = [p for p in params if p.requires_grad]
        self._hook_handles = [p.register_post_accumulate_grad_hook(self._hook) for p in self._requires_update]

    def _step_one(self, p: torch.Tensor) -> None:
        """The user's step on p alone; leaves the delta (new - start) in p."""
        stashed = [g["params"] for g in self.param_groups]
        for g in self.param_groups:
            g["params"] = [q for q in g["params"] if q is p]
        try:
            start = self._starting_models[p]
            with torch.no_grad():
                start.copy_(p)
                self._lightcc_base.step(self)
                p.sub_(start)
        finally:
            for g, params in zip(self.param_groups, stashed):
                g["params"] = params

    def _allreduce_delta_async(self, p: torch.Tensor) -> Tuple[int, Any]:
        if p.grad is None:  # never computed here: a zero gradient, but every rank still submits
            p.grad = torch.zeros_like(p)
        self._step_one(p)
        wire, ctx = self._compression.compress(p.data)
        if not wire.is_contiguous():
            wire = wire.contiguous()
        handle = M.allreduce_async_(wire, name=self._parameter_names.get(p), op=Adasum)
        return handle, (wire, ctx)

    def _hook(self, p: torch.Tensor) -> None:
        if p in self._handles and self._handles[p][0] is not None and self._allreduce_delay[p] <= 0:
            raise AssertionError("gradients were computed more than backward_passes_per_step times before "
                                 "step(); raise backward_passes_per_step to accumulate gradients locally")
        self._allreduce_delay[p] -= 1
        self._handles[p] = self._allreduce_delta_async(p) if self._allreduce_delay[p] == 0 else (None, None)

    def synchronize(self) -> None:
        """Nothing to do: with Adasum, step() completes the exchange (as in Horovod)."""

    @contextlib.contextmanager
    def skip_synchronize(self) -> Iterator[None]:
        raise AssertionError("Skipping synchronization is not supported when using Adasum optimizer.")
        yield  # pragma: no cover

    def step(self, closure: Any = None) -> Any:
        """Finish every parameter's delta exchange and apply the combined deltas."""
        loss = closure() if closure is not None else None
        for p in self._requires_update:
            if self._handles.get(p, (None, None))[0] is None:
                self._handles[p] = self._allreduce_delta_async(p)
        failure: Optional[BaseException] = None
        for p, (handle, (wire, ctx)) in self._handles.items():
            try:  # wait for every handle even after a failure, so none stays in flight
                out = M.synchronize(handle)
            except Exception as e:  # noqa: BLE001  (re-raised below, once the others have finished)
                failure = failure or e
                continue
            start = self._starting_models[p]
            with torch.no_grad():
                start.add_(self._compression.decompress(out, ctx).to(start.dtype))
                p.copy_(start)
            self._allreduce_delay[p] = self.backward_passes_per_step
        self._handles.clear()
        if failure is not None:
            raise failure
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        """The optimizer's zero_grad; AssertionError while delta allreduces are pending."""
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but before "
                                 "optimizer.step(); this is prohibited as it races with the pending allreduces")
        return self._lightcc_base.zero_grad(self, set_to_none)

    def set_backward_passes_per_step(self, passes: int) -> None:
        """Change how many backward passes accumulate locally before a delta is exchanged."""
        self.backward_passes_per_step = passes
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = passes


def adasum_optimizer(optimizer: torch.optim.Optimizer, names: Dict[Any, str], compression: Any,
                     backward_passes_per_step: int) -> torch.optim.Optimizer:
    """An instance of a class made from the optimizer's own class, sharing its groups and state."""
    base = optimizer.__class__
    cls = type(base.__name__, (base,), {k: v for k, v in _AdasumOptimizer.__dict__.items()
                                        if k not in ("__dict__", "__weakref__")})
    cls._lightcc_base = base
    wrapped = cls.__new__(cls)
    wrapped.__dict__.update({k: v for k, v in optimizer.__dict__.items() if not callable(v)})
    wrapped._lightcc_setup(names, compression, backward_passes_per_step)
    return wrapped
