"""broadcast_global_variables: TF1-style broadcast of the graph's global variables."""
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
