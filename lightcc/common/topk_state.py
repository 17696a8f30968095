"""Save and restore top-k error-feedback residuals (LIGHT_TOPK_ALLREDUCE) with a checkpoint."""
from __future__ import annotations

from typing import Dict, Mapping

import numpy as np

from lightcc.common.basics import _check


def topk_state_dict() -> Dict[str, np.ndarray]:
    """This rank's residuals by engine tensor name (e.g. "allreduce.fc.weight"), as float32 copies.

    Residuals differ per rank: save them per rank (e.g. `ckpt_rank{hvd.rank()}.npz`).
    """
    c = _check()
    return {name: np.frombuffer(buf, dtype=np.float32).copy() for name, buf in c.topk_residuals().items()}


def load_topk_state_dict(state: Mapping[str, np.ndarray]) -> None:
    """Restore residuals saved by `topk_state_dict` on this rank (call after init, before training)."""
    c = _check()
    for name, values in state.items():
        arr = np.ascontiguousarray(values, dtype=np.float32).reshape(-1)
        c.set_topk_residual(str(name), arr)
