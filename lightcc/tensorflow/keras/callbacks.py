"""Keras callbacks for model.fit: broadcast, metric averaging, LR schedule and warmup, best checkpoint."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Union

import numpy as np

from lightcc.common.basics import rank, size
from lightcc.common.ops import Average
from lightcc.common.util import is_version_greater_equal_than  # noqa: F401  (Horovod's callbacks module has it)
from lightcc.tensorflow import _host
from lightcc.tensorflow.functions import broadcast_variables
from lightcc.tensorflow.keras._flavour import keras_module, optimizer_variables

_keras = keras_module()


class BroadcastGlobalVariablesCallback(_keras.callbacks.Callback):
    """Make every rank start from root_rank's model and optimizer state.

    The model's variables and the optimizer's existing variables are broadcast when training
    begins, so even the first step starts in sync; optimizer variables that only appear during
    the first step (tf-keras' legacy optimizers create slots lazily) follow after it.
    """

    def __init__(self, root_rank: int, device: str = "", local_variables: Optional[Any] = None) -> None:
        super().__init__()
        self.root_rank = root_rank
        self.device = device
        if local_variables is None:
            local_variables = []
        elif not isinstance(local_variables, (list, tuple, set)):
            local_variables = [local_variables]
        self._local = {id(v) for v in local_variables}
        self._seen: set = set()
        self.broadcast_done = False

    def _broadcast(self, variables: List[Any]) -> None:
        todo = [v for v in variables if id(v) not in self._local and id(v) not in self._seen]
        self._seen.update(id(v) for v in todo)
        broadcast_variables(todo, root_rank=self.root_rank)

    def _optimizer_variables(self) -> List[Any]:
        opt = getattr(self.model, "optimizer", None)
        return optimizer_variables(opt) if opt is not None else []

    def on_train_begin(self, logs: Optional[Dict[str, Any]] = None) -> None:
        if self.broadcast_done:
            return
        self._broadcast(list(self.model.variables) + self._optimizer_variables())

    def on_train_batch_end(self, batch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        if self.broadcast_done:
            return
        self._broadcast(self._optimizer_variables())
        self.broadcast_done = True


class MetricAverageCallback(_keras.callbacks.Callback):
    """Average every metric in `logs` across ranks at the end of each epoch (in place).

    Put it before callbacks that read metrics (ReduceLROnPlateau, checkpoints, TensorBoard).
    """

    def __init__(self, device: str = "") -> None:
        super().__init__()
        self.device = device

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        if not logs:
            return
        names = sorted(logs)
        values = np.array([float(np.asarray(logs[k])) for k in names], dtype=np.float64)
        averaged = _host.allreduce([values], f"MetricAverageCallback.{','.join(names)}", Average, 1.0, 1.0, 0)[0]
        for k, v in zip(names, averaged.tolist()):
            logs[k] = v


def _read(v: Any) -> float:
    return float(np.asarray(v.numpy() if hasattr(v, "numpy") else v))


def _is_variable(v: Any) -> bool:
    return hasattr(v, "assign")


def _get_lr(opt: Any) -> float:
    lr = opt.learning_rate
    if callable(lr) and not _is_variable(lr):
        raise ValueError("the learning-rate callbacks need a constant optimizer learning rate, not a schedule")
    return _read(lr)


def _set_lr(opt: Any, value: float) -> None:
    lr = opt.learning_rate
    if _is_variable(lr):
        lr.assign(value)
    else:
        opt.learning_rate = value


class LearningRateScheduleCallback(_keras.callbacks.Callback):
    """Set the learning rate to initial_lr * multiplier(epoch) between start_epoch and end_epoch.

    `multiplier` is a constant (giving multiplier ** epoch) or a function of the epoch. With
    staircase=True the rate changes at each epoch's first batch (integer epochs); otherwise at
    every batch with epoch = epoch + batch / steps_per_epoch. momentum_correction scales the
    momentum by new_lr / old_lr for that batch when the optimizer keeps momentum in a variable
    (tf-keras' legacy optimizers); Keras 3 and tf-keras 2.11+ bake momentum into the compiled
    step, so there it is left alone.
    """

    def __init__(self, initial_lr: float, multiplier: Union[float, Callable[[float], float]], start_epoch: int = 0,
                 end_epoch: Optional[int] = None, staircase: bool = True, momentum_correction: bool = True,
                 steps_per_epoch: Optional[int] = None) -> None:
        super().__init__()
        if initial_lr is None:
            raise ValueError("initial_lr is required")
        self.initial_lr = initial_lr
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.staircase = staircase
        self.momentum_correction = momentum_correction
        self.steps_per_epoch = steps_per_epoch
        self.current_epoch: Optional[int] = None
        self.restore_momentum: Optional[float] = None
        self.multiplier = multiplier if callable(multiplier) else (lambda epoch: multiplier ** epoch)

    def _autodetect_steps_per_epoch(self) -> int:
        params = self.params or {}
        if params.get("steps"):
            return int(params["steps"])
        if params.get("samples") and params.get("batch_size"):
            return int(params["samples"]) // int(params["batch_size"])
        raise ValueError(f"cannot detect the number of steps per epoch; pass steps_per_epoch to "
                         f"{type(self).__name__}")

    def _adjust_learning_rate(self, epoch: float) -> None:
        opt = self.model.optimizer
        old_lr = _get_lr(opt)
        new_lr = self.initial_lr * self.multiplier(epoch)
        _set_lr(opt, new_lr)
        momentum = getattr(opt, "momentum", None)
        if self.momentum_correction and momentum is not None and _is_variable(momentum) and old_lr > 0:
            self.restore_momentum = _read(momentum)
            momentum.assign(self.restore_momentum * new_lr / old_lr)

    def _restore_momentum_if_needed(self) -> None:
        if self.restore_momentum is not None:
            self.model.optimizer.momentum.assign(self.restore_momentum)
            self.restore_momentum = None

    def on_train_begin(self, logs: Optional[Dict[str, Any]] = None) -> None:
        if not self.staircase and not self.steps_per_epoch:
            self.steps_per_epoch = self._autodetect_steps_per_epoch()

    def on_epoch_begin(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self.current_epoch = epoch

    def on_train_batch_begin(self, batch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        if self.current_epoch < self.start_epoch or (self.end_epoch is not None
                                                     and self.current_epoch >= self.end_epoch):
            return
        if self.staircase and batch == 0:
            self._adjust_learning_rate(self.current_epoch)
        elif not self.staircase:
            self._adjust_learning_rate(self.current_epoch + float(batch) / self.steps_per_epoch)

    def on_train_batch_end(self, batch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self._restore_momentum_if_needed()

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        if logs is not None:
            logs["lr"] = _get_lr(self.model.optimizer)


class LearningRateWarmupCallback(LearningRateScheduleCallback):
    """Ramp the learning rate from initial_lr / size to initial_lr over warmup_epochs.

    lr(epoch) = initial_lr / size * (epoch * (size - 1) / warmup_epochs + 1), evaluated per
    batch at epoch + (batch + 1) / steps_per_epoch (Horovod's multiplier).
    """

    def __init__(self, initial_lr: float, warmup_epochs: int = 5, momentum_correction: bool = True,
                 steps_per_epoch: Optional[int] = None, verbose: int = 0) -> None:
        def multiplier(epoch: float) -> float:
            epoch += 1.0 / self.steps_per_epoch
            return 1.0 / size() * (epoch * (size() - 1) / warmup_epochs + 1)

        super().__init__(initial_lr, multiplier, start_epoch=0, end_epoch=warmup_epochs, staircase=False,
                         momentum_correction=momentum_correction, steps_per_epoch=steps_per_epoch)
        self.verbose = verbose

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        super().on_epoch_end(epoch, logs)
        if epoch == self.end_epoch - 1 and self.verbose > 0 and rank() == 0:
            print(f"\nEpoch {epoch + 1}: finished gradual learning rate warmup to {_get_lr(self.model.optimizer):g}.")


class BestModelCheckpoint(_keras.callbacks.ModelCheckpoint):
    """ModelCheckpoint with save_best_only=True that writes from rank 0 only.

    Horovod's signature has no filepath (its estimators set `callback.filepath` later); lightcc
    also takes an optional `filepath` keyword. Without either, fit raises ValueError.
    """

    def __init__(self, monitor: str = "val_loss", verbose: int = 0, save_weights_only: bool = False,
                 mode: str = "auto", save_freq: Any = "epoch", filepath: Optional[str] = None) -> None:
        self._placeholder = "lightcc_best.weights.h5" if save_weights_only else "lightcc_best.keras"
        super().__init__(filepath=filepath or self._placeholder, monitor=monitor, verbose=verbose,
                         save_best_only=True, save_weights_only=save_weights_only, mode=mode, save_freq=save_freq)

    def on_train_begin(self, logs: Optional[Dict[str, Any]] = None) -> None:
        if self.filepath == self._placeholder:
            raise ValueError("BestModelCheckpoint needs a filepath: pass filepath=... or set callback.filepath")
        parent = getattr(super(), "on_train_begin", None)
        if parent is not None:
            parent(logs)

    def _save_model(self, *args: Any, **kwargs: Any) -> Any:
        if rank() != 0:
            return None
        return super()._save_model(*args, **kwargs)
