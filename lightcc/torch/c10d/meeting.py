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

import secrets
import socket
from datetime import timedelta
from typing import Any, Mapping, Optional

from lightcc.common import basics as _basics
from lightcc.common import launch_env as _le

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


def _my_address(store: Any) -> str:
    """The address the other ranks reach rank 0 at: the route toward torch's store host, if any."""
    import os

    tcp = _tcp_store(store)
    return _le.routable_address(os.environ, toward=getattr(tcp, "host", "") if tcp is not None else "")


def start_engine(store: Any, rank: int, size: int, timeout: timedelta,
                 flag_defaults: Optional[Mapping[str, str]] = None) -> None:
    """Meets the other ranks through `store` and starts lightcc's engine on this process.

    The group's timeout becomes LIGHTCC_TIMEOUT, and `flag_defaults` (flag -> text; the DDP
    hooks' top-k settings) the other flags' values, wherever the environment leaves them unset.
    """
    import os

    own_secret = os.environ.get(_le.JOB_SECRET_VAR, "")
    if size > 1:
        if rank == 0:
            offer = f"{_my_address(store)} {_le.free_port()} {'-' if own_secret else secrets.token_hex(32)}"
            store.set(_KEY, offer)
        try:
            fields = store.get(_KEY).decode().split()
        except Exception as err:  # noqa: BLE001  (torch raises DistStoreError or RuntimeError on a timeout)
            raise RuntimeError(f"lightcc backend: rank {rank} did not find rank 0's meeting point in torch's store "
                               f"(key {_KEY!r}): {err}") from None
        host, port, secret = fields[0], int(fields[1]), fields[2]
        if secret == "-":
            secret = own_secret
            if not secret:
                raise RuntimeError(f"lightcc backend: rank 0 was given {_le.JOB_SECRET_VAR} but rank {rank} was not; "
                                   f"set it on every rank or on none")
    else:
        host, port, secret = "", 0, ""
    # Ranks with one host id share memory; lightccrun and the emulated-hosts harness name hosts.
    hostname = os.environ.get(_le._SOURCES[0].hostname or "", "") or socket.gethostname()
    info = _le.placed("torch.distributed", rank, size, (-1, -1), (-1, -1), hostname, (host, port, secret))
    seconds = max(1, int(timeout.total_seconds())) if timeout else 0
    defaults = {"LIGHTCC_TIMEOUT": str(seconds)} if seconds else {}
    defaults.update(flag_defaults or {})
    _basics.init_placed(info, dynamic_process_sets=True, flag_defaults=defaults)
