"""The "lightcc" torch.distributed backend's name and its one registration with torch.

Both ways in register through `register`: ``import lightcc.torch`` (lightcc.torch.c10d, with the
backend's creator itself) and torch's autoload entry point (lightcc.c10d_autoload, with a creator
that imports the backend when torch first makes a lightcc group). Whichever comes first registers;
the other finds the name taken. This module imports neither lightcc's core nor a front.
"""
from __future__ import annotations

from typing import Any, Callable

BACKEND_NAME = "lightcc"


def register(creator: Callable[..., Any]) -> None:
    """Registers `creator` (torch's extended API: ``(options, backend_options)``) as the backend, unless the
    name is registered already."""
    import torch.distributed as dist

    if dist.is_available() and BACKEND_NAME.upper() not in dist.Backend._plugins:  # noqa: SLF001
        dist.Backend.register_backend(BACKEND_NAME, creator, extended_api=True, devices=["cpu", "cuda"])
