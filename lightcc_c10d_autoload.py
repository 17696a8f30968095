"""torch's backend autoload entry point: registers "lightcc" with torch.distributed while torch is imported.

torch calls `register` from its own ``import torch`` (TORCH_DEVICE_BACKEND_AUTOLOAD, on by
default), so ``init_process_group("lightcc")`` works in a script that never imports lightcc.
It lives outside the lightcc package so that this import loads neither lightcc's core nor its
torch front; the creator below imports them when torch first makes a lightcc group. It must
never break ``import torch``: a failure only leaves registration to ``import lightcc.torch``.
"""
from __future__ import annotations

from typing import Any


def _create(options: Any, backend_options: Any = None) -> Any:
    from lightcc.torch.c10d import _create as create

    return create(options, backend_options)


def register() -> None:
    """Registers the lightcc backend unless it is registered already; quiet on any failure."""
    try:
        import torch.distributed as dist

        if dist.is_available() and "LIGHTCC" not in dist.Backend._plugins:  # noqa: SLF001
            dist.Backend.register_backend("lightcc", _create, extended_api=True, devices=["cpu", "cuda"])
    except Exception:  # noqa: BLE001  (a broken plug-in must not break torch's import)
        pass
