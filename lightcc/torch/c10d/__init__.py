"""lightcc as a torch.distributed backend: ``dist.init_process_group("lightcc")`` after ``import lightcc.torch``.

The default group starts lightcc's engine (meeting.py) and runs on process set 0; every
``new_group`` becomes a lightcc process set made by its members. Shutting down the default
group (``destroy_process_group()``) shuts the engine down, so a later ``init_process_group`` in
the same process starts afresh, as torchrun restarts and Ray expect.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any, Optional

from lightcc.torch.c10d.group import BACKEND_NAME, LightccProcessGroup

__all__ = ["BACKEND_NAME", "LightccProcessGroup", "register"]


# Whether the engine running now was started by the default group (then its shutdown stops it),
# and the default group's timeout, the engine's own (a subgroup's shorter one is kept by its Works).
_STATE: dict = {"owns_engine": False, "engine_timeout": None}


def _release_engine() -> None:
    from lightcc.common import basics
    from lightcc.torch.c10d import p2p

    p2p.forget_pairs()
    if _STATE["owns_engine"]:
        _STATE["owns_engine"] = False
        basics.shutdown()


def _create(options: Any, backend_options: Any = None) -> LightccProcessGroup:
    """torch's creator (extended API): one call per group, on the group's members only."""
    from lightcc.common import basics
    from lightcc.torch.c10d import meeting

    from lightcc.torch.c10d import any_source

    store, rank, size = options.store, options.group_rank, options.group_size
    announce_in = store if any_source.enabled() and size > 1 else None
    timeout: Optional[timedelta] = options.timeout
    global_ranks = list(options.global_ranks_in_group or [])
    group_id = str(options.group_id)
    if not global_ranks:  # the default group
        from lightcc.torch.c10d import p2p

        p2p.forget_pairs()  # pairs made on an engine since shut down (by hvd.shutdown, say) are gone
        if meeting.join_or_start(store, rank, size, timeout or timedelta(minutes=30), "lightcc backend"):
            _STATE["owns_engine"] = True
            _STATE["engine_timeout"] = timeout or timedelta(minutes=30)
        return LightccProcessGroup(rank, size, 0, list(range(size)), f"c10d.{group_id}", timeout,
                                   on_shutdown=_release_engine, announce_in=announce_in)
    if not basics.is_initialized():
        raise RuntimeError("lightcc backend: new_group needs a default group on lightcc (init_process_group)")
    if sorted(global_ranks) == list(range(basics.size())):
        set_id = 0
    else:
        from lightcc.common import process_sets

        set_id = process_sets.add_process_set_of_members(sorted(global_ranks), f"c10d.new_group.{group_id}")
    engine_timeout = _STATE["engine_timeout"]
    shorter = timeout if timeout and engine_timeout and timeout < engine_timeout else None
    return LightccProcessGroup(rank, size, set_id, global_ranks, f"c10d.{group_id}", timeout,
                               on_shutdown=(lambda: _release_set(set_id)) if set_id else None,
                               announce_in=announce_in, wait_limit=shorter)


def _release_set(set_id: int) -> None:
    """A subgroup's destroy_process_group: its members take its process set out of every table."""
    from lightcc.common import basics, process_sets

    if basics.is_initialized():
        process_sets.remove_process_set_of_members(set_id)


def register() -> None:
    """Registers the backend with torch.distributed (idempotent; `import lightcc.torch` calls it, and
    torch's autoload calls lightcc.c10d_autoload, whose creator forwards to `_create`)."""
    from lightcc import c10d_backend

    c10d_backend.register(_create)
