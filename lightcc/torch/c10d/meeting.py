"""The engine's start for torch.distributed: rank, size and timeout from torch, the meeting in torch's store.

torch hands the backend's creator a store every member shares, and the engine bootstraps through
that store itself: no rank serves a rendezvous store of its own, so there is no second address
to agree on or to open. What travels through torch's store, all under ``lightcc/<n>/`` (``n``
counts the inits met in that store with the counter ``lightcc/inits``, so a re-init never reads an
earlier one's keys; any_source.py keeps its own keys under ``lightcc/p2p/``):

* the job secret, as rank 0 made it (``secret``), or "-" when the launcher gave every rank
  ``LIGHTCC_JOB_SECRET`` (as lightccrun does): that one never touches torch's store;
* the engine's bootstrap: rank 0's settings fingerprint, every rank's host id, the names of
  the shared-memory areas and HARP's listen handles, and the barriers between those steps.

torch's store is trusted as torch's own backends trust it: gloo and NCCL exchange their
addresses and NCCL ids through it unauthenticated. The secret still goes along because HARP's
data ports refuse any connection that cannot prove it.
"""
from __future__ import annotations

import secrets
import socket
from datetime import timedelta
from typing import Any, Mapping, Optional

from lightcc.common import basics as _basics
from lightcc.common import launch_env as _le

_PREFIX = "lightcc"


def _fresh_prefix(store: Any, size: int) -> str:
    """``lightcc/<n>/``, `n` the same on every rank of this init and new for each init in `store`.

    Each rank of an init adds 1 to one counter, so the ranks of the n-th init (from 0) get
    n*size+1 .. (n+1)*size whatever their order.
    """
    count = int(store.add(f"{_PREFIX}/inits", 1))
    return f"{_PREFIX}/{(count - 1) // size}/"


def _agree_secret(store: Any, prefix: str, rank: int, env: Mapping[str, str]) -> str:
    """The job secret every rank uses: the launcher's, or one rank 0 makes and puts in `store`.

    Raises:
        RuntimeError: rank 0's offer does not come, or only some ranks were given a secret.
    """
    key = f"{prefix}secret"
    if rank == 0:
        store.set(key, "-" if env.get(_le.JOB_SECRET_VAR) else secrets.token_hex(32))
    try:
        offer = store.get(key).decode()
    except Exception as err:  # noqa: BLE001  (torch raises DistStoreError or RuntimeError on a timeout)
        raise RuntimeError(f"lightcc backend: rank {rank}: rank 0 did not publish the job secret in "
                           f"torch's store (key {key!r}): {err}") from None
    if offer != "-":
        return offer
    secret = env.get(_le.JOB_SECRET_VAR, "")
    if not secret:
        raise RuntimeError(f"lightcc backend: rank {rank}: rank 0 was given {_le.JOB_SECRET_VAR} but this "
                           f"rank was not; set it on every rank")
    return secret


def start_engine(store: Any, rank: int, size: int, timeout: timedelta,
                 flag_defaults: Optional[Mapping[str, str]] = None) -> None:
    """Starts lightcc's engine on this process, meeting the other ranks through torch's `store`.

    The group's timeout becomes LIGHTCC_TIMEOUT, and `flag_defaults` (flag -> text; the DDP
    hooks' top-k settings) the other flags' values, wherever the environment leaves them unset.
    """
    import os

    prefix, secret = "", ""
    if size > 1:
        prefix = _fresh_prefix(store, size)
        secret = _agree_secret(store, prefix, rank, os.environ)
    # Ranks with one host id share memory; lightccrun and the emulated-hosts harness name hosts.
    hostname = os.environ.get(_le._SOURCES[0].hostname or "", "") or socket.gethostname()
    info = _le.placed("torch.distributed", rank, size, (-1, -1), (-1, -1), hostname, ("", 0, secret))
    seconds = max(1, int(timeout.total_seconds())) if timeout else 0
    # c10d's contract makes a collective that some member never issues a bug, not a wait: after
    # the group's timeout it fails on every rank that did issue it, naming the ranks that did not
    # (Horovod's API, which may legitimately wait, only warns by default).
    defaults = {"LIGHTCC_TIMEOUT": str(seconds), "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": str(seconds),
                "HOROVOD_STALL_CHECK_TIME_SECONDS": str(min(60, seconds))} if seconds else {}
    defaults.update(flag_defaults or {})
    # new_group's sets need no dynamic flag
    _basics.init_placed(info, flag_defaults=defaults, store=store if size > 1 else None, store_prefix=prefix)


def join_or_start(store: Any, rank: int, size: int, timeout: timedelta, who: str,
                  flag_defaults: Optional[Mapping[str, str]] = None) -> bool:
    """Starts the engine as `start_engine` does, unless one runs already; returns whether this call started it.

    The backend's default group and the DDP hooks (`who`, named in the error) both come here, so
    an engine started by the other (or by ``hvd.init()``) is joined only where it places this
    process as torch does.

    Raises:
        RuntimeError: the running engine has another rank or size than torch's group.
    """
    if _basics.is_initialized():
        if _basics.rank() != rank or _basics.size() != size:
            raise RuntimeError(f"{who}: lightcc is already initialized as rank {_basics.rank()} of "
                               f"{_basics.size()}, but torch's group has rank {rank} of {size}; call "
                               f"hvd.shutdown() first or start both with the same placement")
        return False
    start_engine(store, rank, size, timeout, flag_defaults=flag_defaults)
    return True
