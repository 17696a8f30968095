"""DistributedOptimizer: gradients are allreduced as backward produces them, then the user's step runs.

The story of one step: backward accumulates a parameter's gradient -> its post-accumulate hook
counts down `backward_passes_per_step` and, at zero, starts an in-place async allreduce of the
gradient (or of its whole group once every member is ready), unless it is a host gradient and the
engine says overlap does not pay here (`overlap_backward()`: one host, one core a rank), when it
only marks it ready -> `step()` calls `synchronize()`, which starts the allreduces not started yet (for
parameters whose hooks never fired, zero-filled, so ranks with a different dynamic graph still
submit every tensor), waits for every handle, writes the results
into `.grad`, and then the user's optimizer class steps. Under top-k compression with an SGD
optimizer, parameters whose momentum the core already applied (DGC momentum correction) are
stepped as plain SGD first and hidden from that step (`topk_training.py`).
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import torch

from lightcc.common.basics import overlap_backward
from lightcc.common.ops import Adasum, Average, check_adasum, resolve_op
from lightcc.common.process_sets import ProcessSet, global_process_set
from lightcc.common.util import split_list
from lightcc.torch import mpi_ops as M
from lightcc.torch.compression import Compression
from lightcc.torch.topk_training import TopkTraining

Group = Tuple[torch.Tensor, ...]
Key = Union[torch.Tensor, Group]
# A handle's context while its gradient waits for synchronize() to start it (LIGHTCC_OVERLAP).
_DEFERRED = object()


class _DistributedOptimizer(torch.optim.Optimizer):
    """Methods mixed into a class made on the fly from the user's optimizer class."""

    _lightcc_base: type

    def _lightcc_setup(self, named_parameters: Optional[Sequence[Tuple[str, torch.Tensor]]], compression: Any,
                       backward_passes_per_step: int, op: int, gradient_predivide_factor: float,
                       groups: Any, sparse_as_dense: bool, process_set: ProcessSet) -> None:
        self._compression = compression
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.sparse_as_dense = sparse_as_dense
        self.process_set = process_set
        self._parameter_names = self._name_parameters(named_parameters)
        self._groups = groups
        self._p_to_group: Dict[torch.Tensor, Group] = {}
        self._group_counts: Dict[Group, int] = {}
        self._handles: Dict[Key, Tuple[Optional[int], Any]] = {}
        self._hook_handles: List[Any] = []
        self._requires_update: List[torch.Tensor] = []  # in parameter order: ranks launch alike
        self._synchronized = False
        self._should_synchronize = True
        self.backward_passes_per_step = backward_passes_per_step
        self._allreduce_delay = {p: backward_passes_per_step for g in self.param_groups for p in g["params"]}
        self._topk: Optional[TopkTraining] = None
        if process_set.included() and process_set.size() > 1:
            self._register_hooks()
            self._topk = TopkTraining(self, self._parameter_names, self._requires_update, process_set)

    # ---- naming and grouping ----------------------------------------------------------------

    def _name_parameters(self, named_parameters: Optional[Sequence[Tuple[str, torch.Tensor]]]) -> Dict[Any, str]:
        if named_parameters is None:
            return {p: f"allreduce.noname.{i}.{j}" for i, g in enumerate(self.param_groups)
                    for j, p in enumerate(g["params"])}
        named = list(named_parameters)
        if any(not isinstance(x, tuple) or len(x) != 2 for x in named):
            raise ValueError("named_parameters should be a sequence of (name, parameter) tuples, usually "
                             "produced by model.named_parameters()")
        names = [k for k, _ in named]
        dups = sorted({k for k in names if names.count(k) > 1})
        if dups:
            raise ValueError(f"parameter names in named_parameters must be unique; duplicates: {', '.join(dups)}")
        named_ids = {id(p) for _, p in named}
        unnamed = [id(p) for g in self.param_groups for p in g["params"] if id(p) not in named_ids]
        if unnamed:
            raise ValueError("named_parameters was given, but some of the optimizer's parameters are not in it "
                             f"(Python object ids: {', '.join(map(str, unnamed))})")
        return {p: k for k, p in named}

    def _make_groups(self, params: List[torch.Tensor]) -> None:
        # Every rank must form identical groups, so order the parameters as rank 0 lists them.
        from lightcc.torch.functions import broadcast_object

        names = broadcast_object([self._parameter_names[p] for p in params], 0, name="optimizer.group_order",
                                 process_set=self.process_set)
        order = {n: i for i, n in enumerate(names)}
        params = sorted(params, key=lambda p: order.get(self._parameter_names[p], len(order)))
        if isinstance(self._groups, list):
            wanted = {id(p) for p in params}
            groups = [[p for p in g if id(p) in wanted] for g in self._groups]
            grouped = {id(p) for g in groups for p in g}
            groups = [g for g in groups if g] + [[p] for p in params if id(p) not in grouped]
        else:
            groups = split_list(params, self._groups)
        for g in groups:
            group = tuple(g)
            for p in group:
                self._p_to_group[p] = group
            self._group_counts[group] = 0

    def _register_hooks(self) -> None:
        params = [p for g in self.param_groups for p in g["params"] if p.requires_grad]
        self._requires_update = params
        if self._groups is not None:
            self._make_groups(params)
        for p in params:
            self._hook_handles.append(p.register_post_accumulate_grad_hook(self._hook))

    # ---- launching allreduces ---------------------------------------------------------------

    def _scales(self) -> Tuple[float, float]:
        if self.op == Average:  # the engine divides by the set size on top of the postscale
            return 1.0 / self.gradient_predivide_factor, self.gradient_predivide_factor
        return 1.0, 1.0

    def _wire_tensor(self, p: torch.Tensor) -> Tuple[torch.Tensor, Any]:
        """The dense, contiguous, compressed tensor to allreduce for p, and its decompress context."""
        if p.grad is None:  # not computed here, maybe elsewhere: every rank must still submit it
            p.grad = torch.zeros_like(p, memory_format=torch.contiguous_format)
        grad = p.grad
        if grad.is_sparse:
            grad = grad.to_dense()
        if not grad.is_contiguous():
            grad = grad.contiguous()
        if self._topk is not None:
            self._topk.adam_update(p, grad)  # Adam/AdamW under top-k: their update travels, not the gradient
        return self._compression.compress(grad)

    def _allreduce_grad_async(self, p: torch.Tensor) -> Tuple[int, Any]:
        name = self._parameter_names.get(p)
        if p.grad is not None and p.grad.is_sparse and not self.sparse_as_dense:
            return M.sparse_allreduce_async(p.grad, name=name, op=self.op, process_set=self.process_set), "sparse"
        wire, ctx = self._wire_tensor(p)
        pre, post = self._scales()
        handle = M.allreduce_async_(wire, name=name, op=self.op, prescale_factor=pre, postscale_factor=post,
                                    process_set=self.process_set)
        return handle, (wire, ctx)

    def _grouped_allreduce_grad_async(self, group: Group) -> Tuple[int, Any]:
        pairs = [self._wire_tensor(p) for p in group]
        pre, post = self._scales()
        handle = M.grouped_allreduce_async_([w for w, _ in pairs], name=self._parameter_names.get(group[0]),
                                            op=self.op, prescale_factor=pre, postscale_factor=post,
                                            process_set=self.process_set)
        return handle, pairs

    def _hook(self, p: torch.Tensor) -> None:
        pending = self._handles.get(p)
        ready = pending is not None and (pending[0] is not None or pending[1] is _DEFERRED)
        if ready and self._allreduce_delay[p] <= 0:
            raise AssertionError("gradients were computed more than backward_passes_per_step times before "
                                 "step(); raise backward_passes_per_step to accumulate gradients locally")
        if self._groups is not None and self._p_to_group[p] in self._handles:
            raise AssertionError("gradients were computed more than backward_passes_per_step times before "
                                 "step(); raise backward_passes_per_step to accumulate gradients locally")
        self._allreduce_delay[p] -= 1
        if self._allreduce_delay[p] > 0:
            self._handles[p] = (None, None)
            return
        # Host gradients only: a GPU's collectives run on the device and overlap the backward pass
        # whatever the core count. synchronize() starts the held ones (see LIGHTCC_OVERLAP).
        if p.device.type == "cpu" and not overlap_backward():
            self._handles[p] = (None, _DEFERRED)
            return
        if self._groups is None:
            self._handles[p] = self._allreduce_grad_async(p)
            return
        group = self._p_to_group[p]
        self._group_counts[group] += 1
        if self._group_counts[group] == len(group):
            for q in group:
                self._handles.pop(q, None)
            self._handles[group] = self._grouped_allreduce_grad_async(group)
        else:
            self._handles[p] = (None, None)

    # ---- completing them --------------------------------------------------------------------

    def _write_back(self, p: torch.Tensor, wire: torch.Tensor, ctx: Any) -> None:
        out = self._compression.decompress(wire, ctx)
        if p.grad.is_sparse:
            p.grad = out.to_sparse()
        elif out is not p.grad:
            p.grad.copy_(out)

    def synchronize(self) -> None:
        """Finish every gradient allreduce of this step and write the results into `.grad`."""
        if not (self.process_set.included() and self.process_set.size() > 1):
            self._synchronized = True
            return
        if self._groups is not None:
            launched = {k for k in self._handles if isinstance(k, tuple) and self._handles[k][0] is not None}
            for group in self._group_counts:
                if group not in launched:
                    for q in group:
                        self._handles.pop(q, None)
                    self._handles[group] = self._grouped_allreduce_grad_async(group)
        else:
            for p in self._requires_update:
                if self._handles.get(p, (None, None))[0] is None:
                    self._handles[p] = self._allreduce_grad_async(p)
        failure: Optional[BaseException] = None
        for key, (handle, ctx) in self._handles.items():
            try:  # wait for every handle even after a failure, so none stays in flight
                output = M.synchronize(handle)
            except Exception as e:  # re-raised below, once the others have finished
                failure = failure or e
                continue
            if isinstance(key, tuple):
                for q, (wire, c) in zip(key, ctx):
                    self._write_back(q, wire, c)
            elif ctx == "sparse":
                key.grad = output
            else:
                self._write_back(key, *ctx)
        for key in self._handles:
            for q in key if isinstance(key, tuple) else (key,):
                self._allreduce_delay[q] = self.backward_passes_per_step
            if isinstance(key, tuple):
                self._group_counts[key] = 0
        self._handles.clear()
        if failure is not None:
            raise failure
        self._synchronized = True

    @contextlib.contextmanager
    def skip_synchronize(self) -> Iterator[None]:
        """Within this block step() does not synchronize (call synchronize() yourself first)."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure: Any = None) -> Any:
        """Synchronize the gradients (unless inside skip_synchronize), then run the optimizer's step."""
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() after "
                              "optimizer.synchronize(); the gradients are allreduced twice. Wrap step() in "
                              "`with optimizer.skip_synchronize():` when you call synchronize() yourself.")
            self.synchronize()
        self._synchronized = False
        if self._topk is None:
            return self._lightcc_base.step(self, closure)
        taken = self._topk.corrected()
        self._topk.apply(taken)
        hidden = self._topk.hide(taken)
        try:
            return self._lightcc_base.step(self, closure)
        finally:
            self._topk.restore(hidden)
            self._topk.declare()  # a scheduler may have changed a group's momentum

    def _lightcc_base_step(self, closure: Any = None) -> Any:
        return self._lightcc_base.step(self, closure)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """The optimizer's zero_grad; AssertionError while gradient allreduces are pending."""
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but before "
                                 "optimizer.step() or optimizer.synchronize(); this is prohibited as it "
                                 "races with the pending gradient allreduces")
        return self._lightcc_base.zero_grad(self, set_to_none)

    def set_backward_passes_per_step(self, passes: int) -> None:
        """Change how many backward passes accumulate locally before an allreduce."""
        self.backward_passes_per_step = passes
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = passes


def DistributedOptimizer(optimizer: torch.optim.Optimizer,
                         named_parameters: Optional[Sequence[Tuple[str, torch.Tensor]]] = None,
                         compression: Any = Compression.none, backward_passes_per_step: int = 1,
                         op: int = Average, gradient_predivide_factor: float = 1.0, num_groups: int = 0,
                         groups: Optional[Union[int, List[List[torch.Tensor]]]] = None,
                         sparse_as_dense: bool = False,
                         process_set: ProcessSet = global_process_set) -> torch.optim.Optimizer:
    """Wrap `optimizer` so its gradients are averaged (or reduced with `op`) across ranks.

    Returns an instance of a class made from the optimizer's own class (isinstance holds) that
    shares its parameter groups, state and defaults. `groups` (an int, or lists of parameters)
    allreduces gradients in fused groups; `num_groups` is its deprecated spelling.
    """
    op = resolve_op(None, op)
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor is supported only with op=Average")
    if backward_passes_per_step < 1:
        raise ValueError(f"backward_passes_per_step must be at least 1, got {backward_passes_per_step}")
    if num_groups != 0:
        warnings.warn("num_groups is deprecated; use groups", DeprecationWarning)
        if groups is None:
            groups = num_groups
    if groups is not None:
        if isinstance(groups, list):
            seen: set = set()
            for g in groups:
                for p in g:
                    if not isinstance(p, torch.Tensor):
                        raise ValueError("groups must be lists of torch.Tensor parameters")
                    if id(p) in seen:
                        raise ValueError("a parameter can appear in only one group")
                    seen.add(id(p))
        elif not isinstance(groups, int) or groups <= 0:
            raise ValueError("groups must be a positive integer or a list of lists of parameters")
    if op == Adasum and process_set.size() > 1:
        # Horovod: Adasum exchanges model deltas after a local step instead of gradients.
        check_adasum(op, process_set)
        from lightcc.torch.adasum_optimizer import adasum_optimizer

        names = _DistributedOptimizer._name_parameters(optimizer, named_parameters)
        return adasum_optimizer(optimizer, names, compression, backward_passes_per_step)
    base = optimizer.__class__
    cls = type(base.__name__, (base,), {k: v for k, v in _DistributedOptimizer.__dict__.items()
                                        if k not in ("__dict__", "__weakref__")})
    cls._lightcc_base = base
    wrapped = cls.__new__(cls)
    # Share everything the user's optimizer holds, except functions an LR scheduler patched onto
    # the instance (they would call the unwrapped step).
    wrapped.__dict__.update({k: v for k, v in optimizer.__dict__.items() if not callable(v)})
    wrapped._lightcc_setup(named_parameters, compression, backward_passes_per_step, op, gradient_predivide_factor,
                           groups, sparse_as_dense, process_set)
    return wrapped
