"""Keras DistributedOptimizer: a subclass made on the fly of the user's optimizer class.

The subclass reduces gradients across ranks where each Keras flavour applies them: `apply` for
Keras 3 (apply_gradients calls it), `apply_gradients` for tf-keras' 2.11+ optimizers and for
its legacy OptimizerV2. Clipping, loss-scale unscaling and weight decay stay in the wrapped
optimizer and therefore run on the reduced gradients. The class keeps the wrapped class's
name and module, so a saved model loads without lightcc.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import tensorflow as tf

from lightcc.common.ops import Average, Sum
from lightcc.common.process_sets import ProcessSet, global_process_set
from lightcc.tensorflow._aggregation import LocalGradientAggregationHelper
from lightcc.tensorflow._grads import GradientReducer
from lightcc.tensorflow.compression import Compression
from lightcc.tensorflow.keras._flavour import KERAS3, TF_KERAS, TF_KERAS_LEGACY, optimizer_flavour


@dataclass(frozen=True)
class Settings:
    """Everything DistributedOptimizer was given besides the optimizer."""

    name: Optional[str] = None
    compression: type = Compression.none
    sparse_as_dense: bool = False
    gradient_predivide_factor: float = 1.0
    op: int = Average
    backward_passes_per_step: int = 1
    average_aggregated_gradients: bool = False
    groups: Any = None
    process_set: ProcessSet = global_process_set
    scale_local_gradients: bool = True

    def validate(self) -> None:
        if self.op not in (Average, Sum):
            raise ValueError("Keras DistributedOptimizer supports op=Average or op=Sum only")
        if self.backward_passes_per_step < 1:
            raise ValueError("backward_passes_per_step must be >= 1")


class _State:
    """Per-instance helpers, kept out of Keras/TF variable tracking (so never saved)."""

    def __init__(self, settings: Settings, name: str) -> None:
        self.reducer = GradientReducer(name, settings.compression, settings.sparse_as_dense, settings.op,
                                       settings.gradient_predivide_factor, settings.groups, settings.process_set,
                                       settings.scale_local_gradients)
        self.agg_helper = (LocalGradientAggregationHelper(
            settings.backward_passes_per_step, self.reducer.reduce, settings.sparse_as_dense,
            settings.average_aggregated_gradients, process_set=settings.process_set,
            scale_local_gradients=settings.scale_local_gradients, name=name)
            if settings.backward_passes_per_step > 1 else None)
        # Set by compute_gradients (whose gradients are reduced already), taken by the next apply.
        self.reduced_pending = False

    def reduce(self, grads: List[Any], variables: List[Any]) -> List[Any]:
        if self.agg_helper is not None:
            return self.agg_helper.compute_gradients(grads, variables)
        return self.reducer.reduce(grads, variables)

    def take_reduced(self, grads: List[Any], variables: List[Any]) -> List[Any]:
        """`grads` reduced across ranks (as they are when compute_gradients reduced them)."""
        if self.reduced_pending:
            self.reduced_pending = False
            return grads
        return self.reduce(grads, variables)

    def apply(self, apply_fn: Any, optimizer: Any) -> Any:
        if self.agg_helper is None:
            return apply_fn()
        return self.agg_helper.apply_gradients(apply_fn, optimizer)


def _state(opt: Any) -> _State:
    st = opt.__dict__.get("_lightcc_state")
    if st is None:
        settings: Settings = type(opt)._lightcc_settings
        st = _State(settings, settings.name or f"Distributed{type(opt).__name__}")
        object.__setattr__(opt, "_lightcc_state", st)  # bypass Keras/TF attribute tracking
    return st


class _Common:
    def register_local_var(self, var: Any) -> None:
        """Keep this variable's gradient local (not reduced across ranks)."""
        _state(self).reducer.register_local(var)

    @property
    def _agg_helper(self) -> Optional[LocalGradientAggregationHelper]:
        """Horovod's name for the gradient-aggregation helper (None unless backward_passes_per_step > 1)."""
        return _state(self).agg_helper

    def compute_gradients(self, loss: Any, var_list: Any, tape: Any = None) -> List[Any]:
        """(gradient, variable) pairs of `loss`, reduced across ranks (Horovod's DistributedOptimizer).

        `loss` is a tensor recorded on `tape` or a zero-argument callable; `var_list` a list of
        variables or a callable returning one. With backward_passes_per_step > 1 the gradients
        are accumulated and reduced every N-th call (see LocalGradientAggregationHelper).
        """
        return self._compute_gradients(loss, var_list, None, tape)

    def _compute_gradients(self, loss: Any, var_list: Any, grad_loss: Any = None, tape: Any = None) -> List[Any]:
        tape = tf.GradientTape() if tape is None else tape
        if callable(loss):
            with tape:
                if not callable(var_list):
                    tape.watch(var_list)
                loss = loss()
        if callable(var_list):
            var_list = var_list()
        variables = list(tf.nest.flatten(var_list))
        grads = tape.gradient(loss, variables, output_gradients=grad_loss)
        st = _state(self)
        reduced = st.reduce(list(grads), variables)
        st.reduced_pending = True
        return list(zip(reduced, variables))


class _Keras3Mixin(_Common):
    def apply(self, grads: Any, trainable_variables: Any = None) -> Any:
        """Reduce `grads` across ranks, then Keras 3's apply (every N-th call when accumulating)."""
        st = _state(self)
        if trainable_variables is None:
            trainable_variables = self._trainable_variables
        variables = list(trainable_variables)
        reduced = st.take_reduced(list(grads), variables)
        if st.agg_helper is not None and not self.built:
            self.build(variables)  # Keras 3 builds on first apply, which must not be inside tf.cond
        return st.apply(lambda: super(_Keras3Mixin, self).apply(reduced, variables), self)


def _split(grads_and_vars: Any) -> tuple:
    pairs = list(grads_and_vars)
    return [g for g, _ in pairs], [v for _, v in pairs]


class _TfKerasMixin(_Common):
    def apply_gradients(self, grads_and_vars: Any, *args: Any, **kwargs: Any) -> Any:
        """Reduce the gradients across ranks, then tf-keras' apply_gradients."""
        st = _state(self)
        grads, variables = _split(grads_and_vars)
        reduced = st.take_reduced(grads, variables)
        parent = super(_TfKerasMixin, self)
        return st.apply(lambda: parent.apply_gradients(list(zip(reduced, variables)), *args, **kwargs), self)


_MIXINS = {KERAS3: _Keras3Mixin, TF_KERAS: _TfKerasMixin, TF_KERAS_LEGACY: _TfKerasMixin}


def wrap_class(base: type, settings: Settings) -> type:
    """A subclass of `base` (same name and module) that reduces gradients with `settings`."""
    settings.validate()
    if "_lightcc_settings" in vars(base):
        raise ValueError(f"{base.__name__} is already a DistributedOptimizer; wrap the original optimizer once")
    mixin = _MIXINS[optimizer_flavour(base)]
    return type(base.__name__, (mixin, base), {"__module__": base.__module__, "_lightcc_settings": settings,
                                               "__doc__": base.__doc__})


def create_distributed_optimizer(optimizer: Any, settings: Settings) -> Any:
    """A fresh optimizer of the wrapped class, configured like `optimizer` (Horovod's behaviour:
    the given instance's variables are not carried over)."""
    cls = wrap_class(type(optimizer), settings)
    config = optimizer.get_config()
    if settings.name is not None:
        config["name"] = settings.name
    return cls.from_config(config)


def wrapped_optimizer_classes(keras: Any, settings: Settings,
                              custom_optimizers: Optional[List[type]] = None) -> Dict[str, type]:
    """custom_objects for load_model: every optimizer class of `keras.optimizers`, wrapped."""
    found: Dict[str, type] = {}
    namespaces = [keras.optimizers]
    legacy = getattr(keras.optimizers, "legacy", None)
    for ns in namespaces + ([legacy] if legacy is not None else []):
        try:
            items = list(vars(ns).items())
        except TypeError:
            continue
        for name, cls in items:
            if isinstance(cls, type) and name[0].isupper():
                try:
                    optimizer_flavour(cls)
                except ValueError:
                    continue
                if cls.__name__ in ("Optimizer", "OptimizerV2", "LossScaleOptimizer"):
                    continue
                found.setdefault(cls.__name__, wrap_class(cls, settings))
    for cls in custom_optimizers or []:
        found[cls.__name__] = wrap_class(cls, settings)
    found.update({k.lower(): v for k, v in list(found.items())})
    return found
