"""Horovod's ``tensorflow.keras.elastic``: KerasState, run, and the callbacks that commit and track progress.

Use them with model.fit inside an ``@hvd.elastic.run`` function: CommitStateCallback commits every
`batches_per_commit` batches (and so checks for new hosts), UpdateBatchStateCallback and
UpdateEpochStateCallback keep `state.batch` and `state.epoch` current, so after a failure fit can
resume with ``initial_epoch=state.epoch`` (or ``epochs=epochs - state.epoch``).
"""
from __future__ import annotations

from typing import Any, Dict, Optional

from lightcc.tensorflow.elastic import TensorFlowKerasState, run
from lightcc.tensorflow.keras._flavour import keras_module

_keras = keras_module()

KerasState = TensorFlowKerasState

__all__ = [
    "CommitStateCallback",
    "KerasState",
    "TensorFlowKerasState",
    "UpdateBatchStateCallback",
    "UpdateEpochStateCallback",
    "run",
]


class CommitStateCallback(_keras.callbacks.Callback):
    """Commits `state` at the end of every `batches_per_commit`-th batch."""

    def __init__(self, state: TensorFlowKerasState, batches_per_commit: int = 1) -> None:
        super().__init__()
        if batches_per_commit < 1:
            raise ValueError(f"batches_per_commit must be at least 1, got {batches_per_commit}")
        self.state = state
        self.batches_per_commit = batches_per_commit
        self.batches_remaining = batches_per_commit

    def on_batch_end(self, batch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self.batches_remaining -= 1
        if self.batches_remaining == 0:
            self.state.commit()
            self.batches_remaining = self.batches_per_commit

    on_train_batch_end = on_batch_end


class UpdateBatchStateCallback(_keras.callbacks.Callback):
    """Keeps `state.batch` at the last finished batch of this epoch (0 at an epoch's end)."""

    def __init__(self, state: TensorFlowKerasState) -> None:
        super().__init__()
        self.state = state

    def on_batch_end(self, batch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self.state.batch = batch

    on_train_batch_end = on_batch_end

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self.state.batch = 0


class UpdateEpochStateCallback(_keras.callbacks.Callback):
    """Counts finished epochs in `state.epoch` (the next epoch to run)."""

    def __init__(self, state: TensorFlowKerasState) -> None:
        super().__init__()
        self.state = state

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        self.state.epoch += 1
