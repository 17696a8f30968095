"""torch.distributed's ReduceOp in lightcc's codes, with the rule for which dtypes each op takes."""
from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

from lightcc.common import ops as _ops

_RED = dist.ReduceOp.RedOpType


def _bitwise_codes() -> dict:
    """BAND/BOR/BXOR where the core has them (integer and bool tensors only)."""
    codes = {}
    for red, name in ((_RED.BAND, "Band"), (_RED.BOR, "Bor"), (_RED.BXOR, "Bxor")):
        if hasattr(_ops, name):
            codes[red] = getattr(_ops, name)
    return codes


_CODES = {
    _RED.SUM: _ops.Sum,
    _RED.AVG: _ops.Average,
    _RED.PRODUCT: _ops.Product,
    _RED.MIN: _ops.Min,
    _RED.MAX: _ops.Max,
    **_bitwise_codes(),
}
_BITWISE = {_RED.BAND, _RED.BOR, _RED.BXOR}


def code(reduce_op: Any, dtype: torch.dtype, what: str) -> int:
    """lightcc's code for a c10d ReduceOp on tensors of `dtype`; ValueError naming what is refused."""
    red = reduce_op.op if hasattr(reduce_op, "op") else reduce_op
    if red not in _CODES:
        raise ValueError(f"lightcc backend: {what} does not support ReduceOp.{red.name} (supported: "
                         f"{', '.join(r.name for r in _CODES)})")
    if red in _BITWISE and (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"lightcc backend: {what} with ReduceOp.{red.name} needs an integer or bool tensor, "
                         f"got {str(dtype).replace('torch.', '')}")
    return _CODES[red]
