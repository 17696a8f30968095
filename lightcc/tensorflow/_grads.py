"""Averages a list of gradients across ranks: shared by DistributedGradientTape and every optimizer."""
from __future__ import annotations

import warnings
from typing import Any, List, Sequence, Set

import tensorflow as tf

from lightcc.common.ops import Average, resolve_op
from lightcc.common.process_sets import ProcessSet, global_process_set
from lightcc.tensorflow import _util as u
from lightcc.tensorflow import reduce as _r
from lightcc.tensorflow.compression import Compression


def resolve_groups(num_groups: int, groups: Any) -> Any:
    """Horovod's rule: `num_groups` is the deprecated spelling of an integer `groups`."""
    if num_groups:
        warnings.warn("`num_groups` is deprecated; pass `groups` instead", DeprecationWarning, stacklevel=3)
        if groups is None:
            groups = num_groups
    if groups is not None and not (isinstance(groups, list) or (isinstance(groups, int) and groups > 0)):
        raise ValueError("groups must be a positive integer or a list of lists of variables")
    return groups


class GradientReducer:
    """Reduces gradients the way Horovod's DistributedGradientTape / DistributedOptimizer do.

    Dense gradients go out as one fused grouped allreduce (or one per group with `groups`);
    IndexedSlices become allgathers unless `sparse_as_dense`. Gradients of registered local
    variables are not reduced and, with `scale_local_gradients`, are divided by the set size.
    """

    def __init__(self, name: str, compression: type = Compression.none, sparse_as_dense: bool = False,
                 op: int = Average, gradient_predivide_factor: float = 1.0, groups: Any = None,
                 process_set: ProcessSet = global_process_set, scale_local_gradients: bool = True) -> None:
        op = resolve_op(None, op)
        if gradient_predivide_factor != 1.0 and op != Average:
            raise ValueError("gradient_predivide_factor is only supported with op=Average")
        self.name = name
        self.compression = compression
        self.sparse_as_dense = sparse_as_dense
        self.op = op
        # The engine divides by the set size for Average; predivide splits that scaling around
        # the sum: x / f before, f / size after.
        self.prescale = 1.0 / gradient_predivide_factor if op == Average else 1.0
        self.postscale = gradient_predivide_factor if op == Average else 1.0
        self.groups = groups
        self.process_set = process_set
        self.scale_local_gradients = scale_local_gradients
        self.local: Set[int] = set()

    def register_local(self, var: Any) -> None:
        """Keep this variable's gradient local (not reduced across ranks)."""
        self.local.add(u.var_key(var))

    def is_local(self, var: Any) -> bool:
        """Whether `var` was registered with register_local."""
        return u.var_key(var) in self.local

    def _split(self, idx: List[int], variables: Sequence[Any]) -> List[List[int]]:
        if self.groups is None:
            if not u.executing_eagerly():
                # Traced: one allreduce per gradient, each submitted as soon as backprop produces
                # it; the engine fuses those queued together (Horovod's default without groups).
                return [[i] for i in idx]
            return [idx] if idx else []
        if isinstance(self.groups, int):
            return u.split_list(idx, self.groups)
        pos = {u.var_key(variables[i]): i for i in idx}
        out, used = [], set()
        for group in self.groups:
            members = [pos[u.var_key(v)] for v in group if u.var_key(v) in pos and pos[u.var_key(v)] not in used]
            used.update(members)
            if members:
                out.append(members)
        out.extend([i] for i in idx if i not in used)  # a variable in no group is a group of its own
        return out

    def reduce(self, grads: Sequence[Any], variables: Sequence[Any], use_generic_names: bool = False) -> List[Any]:
        """Return the reduced gradients, position for position (None stays None)."""
        grads = list(grads)
        n = self.process_set.size() if self.process_set.included() else 1
        if self.sparse_as_dense:
            grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        out: List[Any] = list(grads)
        shared = [i for i, g in enumerate(grads) if g is not None and u.var_key(variables[i]) not in self.local]
        if self.process_set.included() and n > 1:
            for k, group in enumerate(self._split(shared, variables)):
                gname = f"{self.name}.grads.{k}" if use_generic_names or u.executing_eagerly() else None
                reduced = _r.grouped_allreduce([grads[i] for i in group], compression=self.compression, op=self.op,
                                               prescale_factor=self.prescale, postscale_factor=self.postscale,
                                               process_set=self.process_set, name=gname)
                for i, r in zip(group, reduced):
                    out[i] = r
        if self.scale_local_gradients and self.local and n > 1:
            for i, g in enumerate(grads):
                if g is not None and u.var_key(variables[i]) in self.local:
                    out[i] = _scale(g, 1.0 / n)
        return out


def _scale(g: Any, factor: float) -> Any:
    if isinstance(g, tf.IndexedSlices):
        return tf.IndexedSlices(g.values * tf.cast(factor, g.values.dtype), g.indices, g.dense_shape)
    return g * tf.cast(factor, g.dtype)

