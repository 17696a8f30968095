"""The "lightcc" torch.distributed backend's name and its one registration with torch.

Both ways in register through `register`: ``import lightcc.torch`` (lightcc.torch.c10d, with the
backend's creator itself) and torch's autoload entry point (lightcc.c10d_autoload, with a creator
that imports the backend when torch first makes a lightcc group). Whichever comes first registers;
the other finds the name taken. This module imports neither lightcc's core nor a front.
"""
from __future__ import annotations

import os
from typing import Any, Callable

BACKEND_NAME = "lightcc"
# Set by lightccrun's elastic driver in every worker (lightcc.common.elastic_channel.ADDR_VAR).
_ELASTIC_ADDR_VAR = "LIGHTCC_ELASTIC_ADDR"


def register(creator: Callable[..., Any]) -> None:
    """Registers `creator` (torch's extended API: ``(options, backend_options)``) as the backend, unless the
    name is registered already."""
    import torch.distributed as dist

    if dist.is_available() and BACKEND_NAME.upper() not in dist.Backend._plugins:  # noqa: SLF001
        dist.Backend.register_backend(BACKEND_NAME, creator, extended_api=True, devices=["cpu", "cuda"])


def route_env_rendezvous() -> None:
    """In a worker of lightccrun's elastic driver, make torch's ``env://`` join the driver's generations.

    Such a worker has no RANK, WORLD_SIZE or MASTER_ADDR: the driver assigns them per generation.
    Both ways in call this (idempotent; elsewhere it does nothing), so that
    ``dist.init_process_group("lightcc")`` works whether or not the script imported lightcc first;
    the handler itself (lightcc.torch.elastic.rendezvous) loads on the first rendezvous.
    """
    if not os.environ.get(_ELASTIC_ADDR_VAR):
        return
    import importlib

    # The module, not torch.distributed's function of the same name; torch has no public way to
    # replace the handler of a scheme it registered itself.
    handlers = importlib.import_module("torch.distributed.rendezvous")._rendezvous_handlers  # noqa: SLF001
    original = handlers.get("env")
    if original is None or getattr(original, "lightcc_elastic", False):
        return

    def env_or_elastic(url: str, **kwargs: Any) -> Any:
        if not os.environ.get(_ELASTIC_ADDR_VAR):
            return original(url, **kwargs)
        from lightcc.torch.elastic.rendezvous import elastic_handler

        return elastic_handler(url, **kwargs)

    env_or_elastic.lightcc_elastic = True  # type: ignore[attr-defined]
    handlers["env"] = env_or_elastic
