"""The fusion plan the engine chose at init: strategy, bucket sizes and the fitted cost model."""
from __future__ import annotations

from typing import Any, Dict

from lightcc.common.basics import _check


def fusion_info() -> Dict[str, Any]:
    """Describe how this rank fuses allreduces (identical on every rank).

    Keys: ``strategy`` (LIGHT_FUSION_STRATEGY), ``threshold_bytes``, ``first_bucket_bytes``,
    ``bucket_bytes``, ``topk_threshold_bytes`` (None unless LIGHT_TOPK_ALLREDUCE=1, or when the
    model predicts top-k never wins), ``topk_min_dims`` (LIGHT_TOPK_MIN_DIMS) and, for ``cost``, ``cost_model``: per link class (``shm``,
    ``net``) the fitted ``alpha_s`` and ``beta_s_per_byte``, the composed ``allreduce`` line, the
    top-k selection cost and the probe's duration.
    """
    return dict(_check().fusion_info())
