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

from lightcc.common.ops import Average, Sum
from lightcc.common.process_sets import ProcessSet, global_process_set
from lightcc.tensorflow._aggregation import GradientAccumulator
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
        self.accumulator = (GradientAccumulator(settings.backward_passes_per_step,
                                                settings.average_aggregated_gradients, self.reducer)
                            if settings.backward_passes_per_step > 1 else None)


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


class _Keras3Mixin(_Common):
    def apply(self, grads: Any, trainable_variables: Any = None) -> Any:
        """Reduce `grads` across ranks, then Keras 3's apply (every N-th call when accumulating)."""
        st = _state(self)
        grads = list(grads)
        if trainable_variables is None:
            trainable_variables = self._trainable_variables
        variables = list(trainable_variables)
        if st.accumulator is None:
            return super().apply(st.reducer.reduce(grads, variables), variables)
        if not self.built:
            self.build(variables)
        return st.accumulator.apply(grads, variables,
                                    lambda reduced: super(_Keras3Mixin, self).apply(reduced, variables),
                                    self._iterations)


def _split(grads_and_vars: Any) -> tuple:
    pairs = list(grads_and_vars)
    return [g for g, _ in pairs], [v for _, v in pairs]


class _TfKerasMixin(_Common):
    def apply_gradients(self, grads_and_vars: Any, *args: Any, **kwargs: Any) -> Any:
        """Reduce the gradients across ranks, then tf-keras' apply_gradients."""
        st = _state(self)
        grads, variables = _split(grads_and_vars)
        parent = super(_TfKerasMixin, self)
        if st.accumulator is None:
            return parent.apply_gradients(list(zip(st.reducer.reduce(grads, variables), variables)), *args, **kwargs)
        return st.accumulator.apply(
            grads, variables, lambda reduced: parent.apply_gradients(list(zip(reduced, variables)), *args, **kwargs),
            self.iterations)


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
