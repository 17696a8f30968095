"""Eager TensorFlow tensors on the device executor through DLPack: in and out of the engine without a host copy.

Which tensors: GPU tensors, and under LIGHTCC_DEVICE_EXECUTOR=host every tensor (so CI runs this
path on CPU tensors), of a dtype TF exports through DLPack; eager mode only (inside tf.function
collectives stay tf.numpy_function bodies, which move GPU tensors through the host).

How: each input is exported with ``tf.experimental.dlpack.to_dlpack`` and the engine reads TF's
own memory (lightcc.common.dlpack reads the capsule, which keeps the memory alive). Outputs are
TF tensors from TF's allocator (``tf.raw_ops.Empty`` on the input's device), exported the same
way for the engine to write: made here for allreduce and broadcast, and by the core's callback
(lightcc.common.ops.Allocator) once allgather's and reducescatter's sizes are agreed. The
caller gets those very tensors back.

Ordering on a GPU: TensorFlow gives Python no CUDA stream. ``to_dlpack`` returns once the
tensor's memory is ready (its documented contract); fresh outputs may reuse memory TF's stream
still uses, so before the engine may write them this front waits for TF's GPU work
(``tf.test.experimental.sync_devices``), and it returns the outputs only after the engine's work
on them has finished (polling the handle), so TF never reads what the engine still writes. No
GPU with TensorFlow has run this yet (docs/gpu.md).
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Sequence, Tuple

import tensorflow as tf

from lightcc.common import dlpack
from lightcc.common import op_args as _build
from lightcc.common import ops as _ops
from lightcc.common.op_args import Adapted
from lightcc.common.native import core
from lightcc.tensorflow import _util as u

# What TF exports through DLPack and the engine carries (bool is left to the NumPy path).
_EXPORTABLE = frozenset([tf.float16, tf.bfloat16, tf.float32, tf.float64, tf.int8, tf.int16, tf.int32, tf.int64,
                         tf.uint8, tf.uint16])

_counts = {"dlpack_tensors": 0, "host_round_trips": 0}


def counters() -> Dict[str, int]:
    """Tensors the eager front gave a device executor: through DLPack, or as host arrays (on a GPU: copies)."""
    return dict(_counts)


def _on_gpu(t: tf.Tensor) -> bool:
    return ":GPU:" in (t.device or "").upper()


def device_executor_runs(tensors: Sequence[tf.Tensor]) -> bool:
    """Whether a device executor runs these tensors: GPU tensors, or any under LIGHTCC_DEVICE_EXECUTOR=host."""
    return bool(tensors) and (all(_on_gpu(t) for t in tensors) or bool(core().device_executor_on_host()))


def takes(tensors: Sequence[tf.Tensor]) -> bool:
    """Whether the eager collective of `tensors` goes through DLPack (device executor, exportable dtypes)."""
    return device_executor_runs(tensors) and all(t.dtype in _EXPORTABLE for t in tensors)


def count_host_path(tensors: Sequence[tf.Tensor]) -> None:
    """The eager NumPy path is taking tensors a device executor runs: counted (a GPU tensor's host round trip)."""
    if device_executor_runs(tensors):
        _counts["host_round_trips"] += len(tensors)


def _export(t: tf.Tensor) -> dlpack.View:
    return dlpack.view(tf.experimental.dlpack.to_dlpack(t))


def _empty(shape: Sequence[int], like: tf.Tensor) -> Tuple[tf.Tensor, dlpack.View]:
    """An uninitialised tensor from TF's allocator on `like`'s device, and where its memory is."""
    with tf.device(like.device):
        out = tf.raw_ops.Empty(shape=tf.constant(list(shape), dtype=tf.int32), dtype=like.dtype, init=False)
    return out, _export(out)


def _names(base: str, n: int) -> List[str]:
    return [base] if n == 1 else [f"{base}.{i}" for i in range(n)]


def _adapt(name: str, x: dlpack.View, out: int, like: tf.Tensor) -> Adapted:
    """The exported tensor as the op builders take it; `out` 0: the op sizes its output."""
    _counts["dlpack_tensors"] += 1
    return Adapted(name, x.address, out, u.dtype_code(like.dtype), list(x.shape), x.device)


def _allocator(tensors: Sequence[tf.Tensor]) -> _ops.Allocator:
    def allocate(index: int, shape: List[int], nbytes: int) -> Tuple[tf.Tensor, int]:
        out, where = _empty(shape, tensors[index])
        if _on_gpu(tensors[index]):
            tf.test.experimental.sync_devices()  # its memory may still be in use on TF's stream
        return out, where.address

    return allocate


def _run(tensors: Sequence[tf.Tensor], args: List[_ops.TensorArgs], keepalive: Any,
         finish: Callable[[List[_ops.CoreResult]], List[tf.Tensor]], sized: bool) -> List[tf.Tensor]:
    gpu = any(_on_gpu(t) for t in tensors)
    if gpu:
        tf.test.experimental.sync_devices()  # outputs made above may reuse memory TF's stream still uses
    allocate = _allocator(tensors) if sized else None
    if not gpu:
        with _ops.wait_at_once():
            handle = _ops.handles.submit(args, keepalive, finish, allocate)
        return _ops.handles.synchronize(handle)
    handle = _ops.handles.submit(args, keepalive, finish, allocate)
    while not _ops.handles.poll(handle):  # TF's stream cannot wait on ours: the host does
        time.sleep(50e-6)
    return _ops.handles.synchronize(handle)


def allreduce(tensors: Sequence[tf.Tensor], name: str, op: int, prescale: float, postscale: float,
              set_id: int) -> List[tf.Tensor]:
    """Reduce each tensor across the process set (one fused group) into TF-allocated outputs."""
    views = [_export(t) for t in tensors]
    outs = [_empty(v.shape, t) for t, v in zip(tensors, views)]
    args = [_build.allreduce(_adapt(n, v, o[1].address, t), op, prescale, postscale, set_id)
            for n, v, o, t in zip(_names(name, len(tensors)), views, outs, tensors)]
    return _run(tensors, args, (views, outs), lambda _: [o[0] for o in outs], sized=False)


def broadcast(tensors: Sequence[tf.Tensor], name: str, root: int, set_id: int) -> List[tf.Tensor]:
    """Root's tensors on every rank of the process set, in TF-allocated outputs."""
    views = [_export(t) for t in tensors]
    outs = [_empty(v.shape, t) for t, v in zip(tensors, views)]
    args = [_build.broadcast(_adapt(n, v, o[1].address, t), root, set_id)
            for n, v, o, t in zip(_names(name, len(tensors)), views, outs, tensors)]
    return _run(tensors, args, (views, outs), lambda _: [o[0] for o in outs], sized=False)


def allgather(tensors: Sequence[tf.Tensor], name: str, set_id: int) -> List[tf.Tensor]:
    """Each tensor concatenated along dim 0 across the process set; outputs from TF once their size is agreed."""
    views = [_export(t) for t in tensors]
    args = [_build.allgather(_adapt(n, v, 0, t), set_id) for n, v, t in zip(_names(name, len(tensors)), views, tensors)]
    return _run(tensors, args, views, lambda res: [r[0] for r in res], sized=True)


def reducescatter(tensors: Sequence[tf.Tensor], name: str, op: int, prescale: float, postscale: float,
                  set_id: int) -> List[tf.Tensor]:
    """Each tensor reduced, this rank's dim-0 share kept; outputs from TF once their size is known."""
    views = [_export(t) for t in tensors]
    args = [_build.reducescatter(_adapt(n, v, 0, t), op, prescale, postscale, set_id)
            for n, v, t in zip(_names(name, len(tensors)), views, tensors)]
    return _run(tensors, args, views, lambda res: [r[0] for r in res], sized=True)
