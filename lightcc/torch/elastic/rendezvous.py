"""torch.distributed's ``env://`` under lightccrun's elastic driver: each init_process_group joins the next generation.

DESIGN. A process that lightccrun's elastic driver started has no RANK, WORLD_SIZE or MASTER_ADDR
to read: the driver assigns them per generation. In such a process only, torch's autoload of the
backend and ``import lightcc.torch`` put a wrapper in front of torch's ``env://`` handler
(lightcc.c10d_backend.route_env_rendezvous), which calls `elastic_handler` here. It starts
lightcc's engine the way ``hvd.init()`` does under the driver (join the next generation, meet
through that generation's rendezvous store, give up at once if the generation fails while it
forms) and yields rank, size and a torch store for the generation:

* the store is a TCPStore served by the generation's rank 0 on a port it picks, its address
  broadcast over the engine that has just met. Every generation gets a new one, on whichever
  member is rank 0 then: losing the host of an earlier store (or of rank 0) costs nothing but the
  re-formation, unlike torchrun, where the store's host is the job's single master.
* the backend's creator then finds the engine running at the same rank and size and uses it
  (lightcc.torch.c10d), so ``dist.init_process_group("lightcc")`` needs no argument;
* a worker that arrives while the job trains (a warm standby) sets up alone and joins at
  ``run`` (see `elastic_handler`).

Outside the driver (no LIGHTCC_ELASTIC_ADDR) torch's own handler runs unchanged.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any, Iterator, Optional, Tuple

# How long a member tries to reach rank 0's store: rank 0 may die between sending the address and the
# connection, and torch's connect would otherwise retry for the whole group timeout.
CONNECT_TIMEOUT = timedelta(seconds=5)


def _generation_store(rank: int, size: int, timeout: timedelta) -> Any:
    """A TCPStore served by this generation's rank 0, its address agreed over the running engine."""
    import torch.distributed as dist

    from lightcc.common.elastic_worker import session
    from lightcc.torch.functions import broadcast_object

    address: Optional[Tuple[str, int]] = None
    server = None
    if rank == 0:
        server = dist.TCPStore("0.0.0.0", 0, size, True, timeout=timeout, wait_for_workers=False)
        a = session().assignment
        address = (a.rendezvous_host if a is not None else "127.0.0.1", int(server.port))
    host, port = broadcast_object(address, root_rank=0, name="elastic.c10d.store")
    if server is not None:
        return server
    store = dist.TCPStore(host, port, size, False, timeout=min(timeout, CONNECT_TIMEOUT))
    store.set_timeout(timeout)
    return store


def _start_alone() -> Any:
    """The engine for this process alone (rank 0 of 1) and a store of its own."""
    import socket

    import torch.distributed as dist

    from lightcc.common import basics
    from lightcc.common import launch_env as le

    info = le.placed("lightccrun elastic (alone until it joins)", 0, 1, (-1, -1), (-1, -1), socket.gethostname(),
                     ("", 0, ""))
    basics.init_placed(info)
    return dist.HashStore()


def elastic_handler(url: str, timeout: timedelta = timedelta(minutes=30), **kwargs: Any) -> Iterator[Tuple[Any, int, int]]:
    """torch's rendezvous contract: yield (store, rank, world_size) once.

    A worker that arrives while the job already trains (a warm standby, a replacement) does not
    join yet: the script's set-up (DDP's constructor runs collectives) would meet collectives the
    members never issue. It sets up in a world of its own and joins when its training function
    starts under lightcc.torch.elastic.run, as the members re-form.
    """
    from lightcc.common import basics
    from lightcc.common.elastic_worker import session

    s = session()
    if s.joins_late():
        store = _start_alone()
        s.started_alone()
        yield store, 0, 1
    else:
        while True:
            basics.init()  # joins the driver's next generation; a generation that fails while forming is retried
            rank, size = basics.rank(), basics.size()
            try:
                store = _generation_store(rank, size, timeout)
                break
            except Exception as err:  # noqa: BLE001  (torch's connect error, or the engine's)
                if not s.generation_failed():
                    raise
                s.report_failure(f"rank {rank}: generation {s.generation} failed while agreeing on torch's store: "
                                 f"{str(err).splitlines()[0]}")
                basics.shutdown()  # and join the next one
        yield store, rank, size
    raise RuntimeError("lightcc elastic rendezvous: torch asked to rendezvous again without a new "
                       "init_process_group; re-form the job with lightcc.torch.elastic.run instead")
