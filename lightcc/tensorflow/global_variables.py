"""broadcast_global_variables and BroadcastGlobalVariablesHook: TF1-style broadcast of the global variables."""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from lightcc.tensorflow.functions import broadcast_variables


def broadcast_global_variables(root_rank: int) -> Any:
    """Broadcast every variable in the TF1 global-variables collection from root_rank.

    Only meaningful in TF1 graph mode (tf.compat.v1 with eager execution disabled), where it
    returns the op to run. TF2 has no global collection: eagerly this raises RuntimeError; use
    broadcast_variables(model.variables, root_rank) or BroadcastGlobalVariablesCallback.
    """
    if tf.executing_eagerly():
        raise RuntimeError("broadcast_global_variables() does not support eager execution; use "
                           "lightcc.tensorflow.broadcast_variables(<model and optimizer variables>, root_rank)")
    return broadcast_variables(tf.compat.v1.global_variables(), root_rank)


class BroadcastGlobalVariablesHook(tf.compat.v1.train.SessionRunHook):
    """A TF1 SessionRunHook that broadcasts every global variable from root_rank once the session exists.

    For tf.compat.v1 MonitoredTrainingSession / Estimator-style loops (graph mode). `device` is
    accepted for Horovod compatibility; lightcc broadcasts in host memory.
    """

    def __init__(self, root_rank: int, device: str = "") -> None:
        super().__init__()
        self.root_rank = root_rank
        self.device = device
        self.bcast_op = None

    def begin(self) -> None:
        if self.bcast_op is None or self.bcast_op.graph != tf.compat.v1.get_default_graph():
            self.bcast_op = broadcast_global_variables(self.root_rank)

    def after_create_session(self, session: Any, coord: Any) -> None:
        session.run(self.bcast_op)
