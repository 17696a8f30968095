"""torch's backend autoload entry point: registers "lightcc" while torch is imported, loading nothing else of lightcc.

torch calls `autoload` from its own ``import torch`` (TORCH_DEVICE_BACKEND_AUTOLOAD, on by
default; the ``torch.backends`` entry point in pyproject.toml), so ``init_process_group("lightcc")``
works in a script that never imports lightcc. ``import lightcc`` is lazy, so this import loads
neither the core nor a front; the creator below imports the backend (lightcc.torch.c10d) when
torch first makes a lightcc group.
"""
from __future__ import annotations

from typing import Any

from lightcc import c10d_backend


def _create(options: Any, backend_options: Any = None) -> Any:
    """torch's creator (extended API), forwarded to the backend's own."""
    from lightcc.torch.c10d import _create as create

    return create(options, backend_options)


def autoload() -> None:
    """Registers the backend, quiet on any failure: a broken plug-in must not break ``import torch``
    (``import lightcc.torch`` then registers it, or says why it cannot)."""
    try:
        c10d_backend.register(_create)
        c10d_backend.route_env_rendezvous()  # a worker of lightccrun's elastic driver: env:// joins it
    except Exception:  # noqa: BLE001
        pass
