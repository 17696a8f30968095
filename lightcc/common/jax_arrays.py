"""JAX arrays at the framework-agnostic front: in as NumPy or CuPy views through DLPack, results back as JAX arrays.

The engine takes host buffers and CUDA device pointers; JAX exposes neither a stream nor writable
buffers, so a JAX array crosses into the front as the view its DLPack export gives:

* on a GPU, a CuPy array over the same memory (``cupy.from_dlpack``; no copy). CuPy hands JAX its
  current stream in the DLPack exchange, so JAX orders its pending writes before that stream, the
  stream the engine orders itself after. Results go back with ``jax.dlpack.from_dlpack``, the same
  exchange in the other direction. CuPy is the one extra requirement of JAX on a GPU.
* on the host, a read-only NumPy view; results go back with ``jax.numpy.asarray``.

JAX arrays are immutable: the in-place forms (``allreduce_``, ``broadcast_``, ...) refuse them.
No framework is imported unless a JAX array is handed in.
"""
from __future__ import annotations

from typing import Any

_DL_CUDA = 2


def is_jax(a: Any) -> bool:
    """A jax.Array, recognised without importing JAX."""
    mod = type(a).__module__.split(".", 1)[0]
    return mod in ("jax", "jaxlib") and hasattr(a, "__dlpack_device__")


def on_gpu(a: Any) -> bool:
    """Whether a JAX array lives on a CUDA device."""
    return int(a.__dlpack_device__()[0]) == _DL_CUDA


def to_native(a: Any) -> Any:
    """The NumPy (host) or CuPy (GPU) view of a JAX array, sharing its memory."""
    if on_gpu(a):
        try:
            import cupy
        except ImportError as e:
            raise ValueError("JAX arrays on a GPU reach lightcc through CuPy's DLPack import: install "
                             "cupy-cuda12x or cupy-cuda13x to match your CUDA") from e
        return cupy.from_dlpack(a)
    import numpy as np

    return np.asarray(a)


def to_jax(x: Any) -> Any:
    """A result of the front (NumPy/CuPy array, or a list/tuple of them) as JAX arrays; other values as they are."""
    if isinstance(x, (list, tuple)):
        return type(x)(to_jax(v) for v in x)
    mod = type(x).__module__.split(".", 1)[0]
    if mod == "cupy":
        import jax.dlpack

        return jax.dlpack.from_dlpack(x)
    if mod == "numpy":
        import jax.numpy as jnp

        return jnp.asarray(x)
    return x


def refuse_in_place(a: Any, what: str) -> None:
    """In-place forms cannot write into an immutable JAX array."""
    if is_jax(a):
        raise ValueError(f"{what}: JAX arrays are immutable; use the out-of-place form, which returns a new array")


def first_array(tensors: Any) -> Any:
    """The tensor that decides a call's framework: the argument itself, or a group's first."""
    if isinstance(tensors, (list, tuple)):
        return tensors[0] if tensors else None
    return tensors
