"""Torch tensors at the core's edge: dtype codes, argument checks, raw addresses, zero-copy wrapping."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from lightcc.common import device_arrays as _gpu
from lightcc.common import dtypes as _dt
from lightcc.common import ops as _ops
from lightcc.common.op_args import Adapted

_CODES: Dict[torch.dtype, int] = {
    torch.uint8: _dt.UINT8,
    torch.int8: _dt.INT8,
    torch.int16: _dt.INT16,
    torch.uint16: _dt.UINT16,
    torch.int32: _dt.INT32,
    torch.int64: _dt.INT64,
    torch.float16: _dt.FLOAT16,
    torch.bfloat16: _dt.BFLOAT16,
    torch.float32: _dt.FLOAT32,
    torch.float64: _dt.FLOAT64,
    torch.bool: _dt.BOOL,
}


def dtype_code(dtype: torch.dtype) -> int:
    """The core's code for a torch dtype; ValueError for dtypes lightcc cannot reduce or move."""
    try:
        return _CODES[dtype]
    except KeyError:
        names = ", ".join(str(d).replace("torch.", "") for d in _CODES)
        raise ValueError(f"lightcc does not support dtype {str(dtype).replace('torch.', '')}; "
                         f"supported: {names}") from None


def check(tensor: Any, what: str) -> torch.Tensor:
    """Validate a collective's input: a dense, contiguous tensor of a supported dtype."""
    if not isinstance(tensor, torch.Tensor):
        raise ValueError(f"{what} expects a torch.Tensor, got {type(tensor).__name__}")
    if tensor.layout != torch.strided:
        raise ValueError(f"{what}: sparse tensors go through sparse_allreduce_async (or sparse_as_dense=True)")
    if not tensor.is_contiguous():
        raise ValueError(f"{what}: the tensor is not contiguous; pass tensor.contiguous()")
    dtype_code(tensor.dtype)
    return tensor


def is_device(tensor: torch.Tensor) -> bool:
    """Whether the tensor lives on an accelerator (a GPU: the engine's device executor runs it)."""
    return tensor.device.type != "cpu"


def placement(tensor: torch.Tensor) -> Tuple[int, int]:
    """(CUDA device ordinal, the caller's current stream there) of a GPU tensor; (-1, 0) on the CPU."""
    kind = tensor.device.type
    if kind == "cpu":
        return -1, 0
    if kind != "cuda":
        raise ValueError(f"lightcc runs collectives on cpu and cuda tensors, not {kind}")
    index = tensor.device.index if tensor.device.index is not None else torch.cuda.current_device()
    return int(index), int(torch.cuda.current_stream(index).cuda_stream)


def adapt(tensor: torch.Tensor, name: str, out: int = 0, shape: Optional[Sequence[int]] = None) -> Adapted:
    """`tensor` as the op builders take it (lightcc/common/op_args.py): its address, dtype code, shape
    (or `shape`, where the wire's differs), device and stream; `out` 0: the op sizes its output."""
    return Adapted(name, ptr(tensor), out, dtype_code(tensor.dtype), tensor.shape if shape is None else shape,
                   *placement(tensor))


def same_device(tensors: Sequence[torch.Tensor], what: str) -> bool:
    """True if every tensor is on an accelerator, False if every one is on the CPU; ValueError if mixed."""
    kinds = {is_device(t) for t in tensors}
    if len(kinds) > 1:
        raise ValueError(f"{what}: a group mixes CPU and accelerator tensors; use one kind per call")
    return kinds == {True}


def ptr(tensor: torch.Tensor) -> int:
    """The tensor's first byte: handed to the core, which reads or writes it without a copy."""
    return int(tensor.data_ptr())


def allocator(tensors: Sequence[torch.Tensor]) -> _ops.Allocator:
    """The core's output allocator for a submission of `tensors`: torch's own allocator on each input's device.

    A CUDA output comes from the caching allocator with the caller's current stream (as at
    submission) current, so torch reuses its memory in that stream's order, as for a tensor the
    caller made; the core orders its own stream after the caller's from that point.
    """
    streams = [torch.cuda.current_stream(t.device) if t.is_cuda else None for t in tensors]

    def allocate(index: int, shape: List[int], nbytes: int) -> Tuple[torch.Tensor, int]:
        like, stream = tensors[index], streams[index]
        if stream is None:
            out = torch.empty(shape, dtype=like.dtype, device=like.device)
        else:
            with torch.cuda.stream(stream):
                out = torch.empty(shape, dtype=like.dtype, device=like.device)
        return out, int(out.data_ptr())

    return allocate


def wrap(result: _ops.CoreResult, dtype: torch.dtype, device: Any = None) -> torch.Tensor:
    """The output of a result: the tensor `allocator` made, or one over an engine-allocated buffer (no copy).

    Engine GPU buffers come back on their GPU through ``__cuda_array_interface__``; `device`
    places an empty result where the input was.
    """
    buf, shape, _, _ = result
    if isinstance(buf, torch.Tensor):
        return buf
    shape = [int(d) for d in shape]
    itemsize = torch.empty((), dtype=dtype).element_size()
    n = _gpu.nbytes(shape, itemsize)
    if buf is None or n == 0:
        return torch.empty(shape, dtype=dtype, device=device)
    if _gpu.on_gpu(buf):
        raw = torch.as_tensor(_gpu.CudaBytes(buf, n), device=f"cuda:{int(buf.device)}")
        return raw.view(dtype).view(shape)
    return torch.frombuffer(buf, dtype=dtype, count=n // itemsize).view(shape)
