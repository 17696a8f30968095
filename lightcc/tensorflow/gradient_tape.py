"""DistributedGradientTape and PartialDistributedGradientTape: tf.GradientTape whose gradients are averaged."""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

import tensorflow as tf

from lightcc.common.ops import Average
from lightcc.common.process_sets import ProcessSet, global_process_set
from lightcc.tensorflow._grads import GradientReducer, resolve_groups
from lightcc.tensorflow.compression import Compression


class _DistributedTapeMixin:
    """Placed before the user's tape class; the recorded tape state is shared, not copied."""

    _lightcc_reducer: GradientReducer

    def register_local_source(self, source: Any) -> None:
        """Keep this source's gradient local: it is not reduced across ranks (and is divided by
        the set size when scale_local_gradients is on)."""
        self._lightcc_reducer.register_local(source)

    def gradient(self, target: Any, sources: Any, output_gradients: Any = None,
                 unconnected_gradients: Any = tf.UnconnectedGradients.NONE, use_generic_names: bool = False) -> Any:
        """tf.GradientTape.gradient, then the gradients averaged (or summed) across ranks.

        `sources` may be any nest of tf.Variable / Keras variables / tensors; the result has
        the same structure.
        """
        grads = super().gradient(target, sources, output_gradients, unconnected_gradients)  # type: ignore[misc]
        flat_sources = tf.nest.flatten(sources)
        flat_grads = tf.nest.flatten(grads) if grads is not None else [None] * len(flat_sources)
        reduced = self._lightcc_reducer.reduce(flat_grads, flat_sources, use_generic_names)
        return tf.nest.pack_sequence_as(sources, reduced)

    def get_local_and_global_gradients(self, target: Any, sources: Any, output_gradients: Any = None,
                                       use_generic_names: bool = False) -> Tuple[List[Any], List[Any]]:
        """gradient(), split into ([(source, grad)] of local sources, [(source, grad)] of the others),
        each in the order of `sources` (Horovod's PartialDistributedGradientTape method)."""
        flat = tf.nest.flatten(sources)
        grads = tf.nest.flatten(self.gradient(target, flat, output_gradients, use_generic_names=use_generic_names))
        local: List[Any] = []
        shared: List[Any] = []
        for s, g in zip(flat, grads):
            (local if self._lightcc_reducer.is_local(s) else shared).append((s, g))
        return local, shared


def DistributedGradientTape(gradtape: tf.GradientTape, device_dense: str = "", device_sparse: str = "",
                            compression: type = Compression.none, sparse_as_dense: bool = False, op: int = Average,
                            gradient_predivide_factor: float = 1.0, num_groups: int = 0, groups: Any = None,
                            process_set: ProcessSet = global_process_set,
                            scale_local_gradients: bool = True) -> tf.GradientTape:
    """Wrap a recorded tf.GradientTape so `gradient()` returns gradients reduced across ranks.

    The result is an instance of a subclass of the tape's own class that shares its recording.
    `groups`: an int (that many fused groups) or a list of lists of variables (each list one
    group; variables in none form their own). Without groups, all gradients travel as one fused
    group. Works eagerly and inside tf.function, with tf.Variable and Keras 3 variables.
    """
    groups = resolve_groups(num_groups, groups)
    cls = type(type(gradtape).__name__, (_DistributedTapeMixin, type(gradtape)), {"__module__": __name__})
    tape = cls.__new__(cls)
    tape.__dict__.update(gradtape.__dict__)
    tape._lightcc_reducer = GradientReducer("DistributedGradientTape", compression, sparse_as_dense, op,
                                            gradient_predivide_factor, groups, process_set, scale_local_gradients)
    return tape


def PartialDistributedGradientTape(gradtape: tf.GradientTape, device_dense: str = "", device_sparse: str = "",
                                   compression: type = Compression.none, sparse_as_dense: bool = False,
                                   op: int = Average, gradient_predivide_factor: float = 1.0, num_groups: int = 0,
                                   groups: Any = None, process_set: ProcessSet = global_process_set,
                                   local_layers: Optional[Any] = None,
                                   scale_local_gradients: bool = True) -> tf.GradientTape:
    """DistributedGradientTape that leaves the gradients of `local_layers` (Keras layers) local."""
    if local_layers is None:
        local_layers = []
    elif hasattr(local_layers, "trainable_weights"):
        local_layers = [local_layers]
    local_layers = list(local_layers)
    if not all(hasattr(layer, "trainable_weights") for layer in local_layers):
        raise ValueError("local_layers must be Keras layers (tf.keras or Keras 3)")
    tape = DistributedGradientTape(gradtape, device_dense, device_sparse, compression, sparse_as_dense, op,
                                   gradient_predivide_factor, num_groups, groups, process_set, scale_local_gradients)
    for layer in local_layers:
        for var in layer.trainable_weights:
            tape.register_local_source(var)
    return tape
