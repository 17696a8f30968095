"""The "lightcc" torch.distributed backend's one registration, and torch's autoload entry point for it.

torch calls `autoload` from its own ``import torch`` (TORCH_DEVICE_BACKEND_AUTOLOAD, on by
default; the ``torch.backends`` entry point in pyproject.toml), so ``init_process_group("lightcc")``
works in a script that never imports lightcc; ``import lightcc.torch`` calls `register` too, for
interpreters where the autoload is off. This module imports neither lightcc's core nor its torch
front (``import lightcc`` is lazy for the same reason): the creator below imports them when torch
first makes a lightcc group.
"""
from __future__ import annotations

from typing import Any

BACKEND_NAME = "lightcc"


def _create(options: Any, backend_options: Any = None) -> Any:
    """torch's creator (extended API), forwarded to the backend itself (lightcc.torch.c10d)."""
    from lightcc.torch.c10d import _create as create

    return create(options, backend_options)


def register() -> None:
    """Registers the backend with torch.distributed unless it is registered already."""
    import torch.distributed as dist

    if dist.is_available() and BACKEND_NAME.upper() not in dist.Backend._plugins:  # noqa: SLF001
        dist.Backend.register_backend(BACKEND_NAME, _create, extended_api=True, devices=["cpu", "cuda"])


def autoload() -> None:
    """torch's entry point: `register`, quiet on any failure (a broken plug-in must not break ``import torch``;
    then ``import lightcc.torch`` registers the backend, or says why it cannot)."""
    try:
        register()
    except Exception:  # noqa: BLE001
        pass
