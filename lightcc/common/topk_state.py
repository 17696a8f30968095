"""Save and restore top-k state (LIGHT_TOPK_ALLREDUCE): error-feedback residuals and momentum velocities."""
from __future__ import annotations

from typing import Dict, Mapping

import numpy as np

from lightcc.common.basics import _check


def topk_state_dict() -> Dict[str, np.ndarray]:
    """This rank's residuals by engine tensor name (e.g. "allreduce.fc.weight"), as float32 copies.

    Tensors with DGC momentum correction (docs/topk.md) also have their velocity, under
    "velocity:" + the name. Both differ per rank: save them per rank (e.g.
    `ckpt_rank{hvd.rank()}.npz`; `lightcc.checkpoint` does).
    """
    c = _check()
    return {name: np.frombuffer(buf, dtype=np.float32).copy() for name, buf in c.topk_residuals().items()}


def load_topk_state_dict(state: Mapping[str, np.ndarray]) -> None:
    """Restore residuals and velocities saved by `topk_state_dict` on this rank (after init, before training)."""
    c = _check()
    for name, values in state.items():
        arr = np.ascontiguousarray(values, dtype=np.float32).reshape(-1)
        c.set_topk_residual(str(name), arr)
