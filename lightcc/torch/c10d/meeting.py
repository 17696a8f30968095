"""The engine's start for torch.distributed: rank, size and timeout from torch, the meeting through torch's store.

torch hands the backend's creator a store every member shares. Rank 0 of the default group puts
``host port secret`` there; every rank reads it and starts lightcc's engine, which bootstraps
through its own authenticated store at that address (HMAC with the secret) and connects shared
memory and HARP. torch's store is trusted as torch's own backends trust it (gloo and NCCL
exchange their addresses through it unauthenticated); the secret still goes along because
HARP's data ports refuse anyone without it. A secret the launcher gave every rank
(``LIGHTCC_JOB_SECRET``, as lightccrun does) never touches torch's store.
"""
from __future__ import annotations

import socket
from datetime import timedelta
from typing import Any, Mapping, Optional

from lightcc.common import basics as _basics
from lightcc.common import launch_env as _le
from lightcc.common.launch_more import meet_through_store

_KEY = "lightcc/meeting"


def _tcp_store(store: Any) -> Any:
    """The TCPStore under torch's PrefixStores, or None (a FileStore or HashStore)."""
    seen = 0
    while store is not None and seen < 16:
        if type(store).__name__ == "TCPStore":
            return store
        store = getattr(store, "underlying_store", None)
        seen += 1
    return None


def start_engine(store: Any, rank: int, size: int, timeout: timedelta,
                 flag_defaults: Optional[Mapping[str, str]] = None) -> None:
    """Meets the other ranks through `store` and starts lightcc's engine on this process.

    The group's timeout becomes LIGHTCC_TIMEOUT, and `flag_defaults` (flag -> text; the DDP
    hooks' top-k settings) the other flags' values, wherever the environment leaves them unset.
    """
    import os

    if size > 1:
        tcp = _tcp_store(store)
        try:
            host, port, secret = meet_through_store(store, _KEY, rank, os.environ,
                                                    toward=getattr(tcp, "host", "") if tcp is not None else "",
                                                    where=f"torch's store (key {_KEY!r})")
        except ValueError as err:
            raise RuntimeError(f"lightcc backend: {err}") from None
    else:
        host, port, secret = "", 0, ""
    # Ranks with one host id share memory; lightccrun and the emulated-hosts harness name hosts.
    hostname = os.environ.get(_le._SOURCES[0].hostname or "", "") or socket.gethostname()
    info = _le.placed("torch.distributed", rank, size, (-1, -1), (-1, -1), hostname, (host, port, secret))
    seconds = max(1, int(timeout.total_seconds())) if timeout else 0
    # c10d's contract makes a collective that some member never issues a bug, not a wait: after
    # the group's timeout it fails on every rank that did issue it, naming the ranks that did not
    # (Horovod's API, which may legitimately wait, only warns by default).
    defaults = {"LIGHTCC_TIMEOUT": str(seconds), "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": str(seconds),
                "HOROVOD_STALL_CHECK_TIME_SECONDS": str(min(60, seconds))} if seconds else {}
    defaults.update(flag_defaults or {})
    _basics.init_placed(info, flag_defaults=defaults)  # new_group's sets need no dynamic flag
