"""init/shutdown, topology queries and build facts: Horovod's basics, shared by every front."""
from __future__ import annotations

import atexit
from pathlib import Path
from typing import Any, List, Optional, Sequence, Union

from lightcc.common import build_info as _build_info
from lightcc.common import process_sets as _ps
from lightcc.common.native import core
from lightcc.common.process_sets import ProcessSet, global_process_set  # noqa: F401  (Horovod's basics has them)

NOT_INITIALIZED = "Horovod has not been initialized; use hvd.init()."


def _plugin_path() -> str:
    return str(Path(__file__).resolve().parent.parent / "lib" / "libnccl-net-harp.so")


def init(comm: Optional[Any] = None,
         process_sets: Optional[Union[str, Sequence[_ps.ProcessSet]]] = None) -> None:
    """Start lightcc in this process: find the launcher's variables, rendezvous, start the engine.

    `comm` may be an mpi4py communicator (its ranks become the job) or a list of the launcher's
    ranks (they become the job, renumbered in list order; see _subset_info). `process_sets` is a list of
    ProcessSet objects registered now on every rank (ids 1..n), or "dynamic" to allow
    add_process_set/remove_process_set later (as HOROVOD_DYNAMIC_PROCESS_SETS=1).
    Calling init twice without shutdown is a no-op, as in Horovod.
    """
    from lightcc.common.launch_env import detect

    c = core()
    if c.is_initialized():
        return
    dynamic = False
    if isinstance(process_sets, str):
        if process_sets != "dynamic":
            raise ValueError(f"process_sets must be a list of ProcessSet or 'dynamic', got {process_sets!r}")
        dynamic = True  # as HOROVOD_DYNAMIC_PROCESS_SETS=1, for this init only
        process_sets = []
    sets: List[_ps.ProcessSet] = list(process_sets or [])
    for ps in sets:
        if not isinstance(ps, _ps.ProcessSet):
            raise ValueError(f"process_sets entries must be ProcessSet objects, got {ps!r}")
    from lightcc.common.elastic_worker import session

    elastic = session()  # started by lightccrun's elastic driver: it says where we sit
    while True:
        if elastic is not None:
            info = elastic.launch_info()
        elif comm is not None and not _is_mpi_comm(comm):
            info = _subset_info(detect(None), comm)
        else:
            info = detect(comm)
        _ps._check_static(sets, info.size)  # before connecting: every rank refuses alike, none waits
        opts = _engine_options(info, sets, dynamic)
        if elastic is None:
            c.init(opts)
            break
        try:
            c.init({**opts, **elastic.init_options()})
            break
        except c.LightCCInternalError as err:
            if not elastic.generation_failed():
                raise
            elastic.report_failure(f"init failed: {err}")  # the generation failed while forming: join the next
    _ps._reset()
    for i, ps in enumerate(sets, start=1):
        _ps._register(ps, i)
    from lightcc.common.env_names import warn_unread

    warn_unread(c.rank(), (f["name"] for f in c.flags()))


def _engine_options(info: Any, sets: Sequence[_ps.ProcessSet], dynamic: bool) -> dict:
    """The core's init options for a process placed by `info` (a LaunchInfo)."""
    return {
        "rank": info.rank,
        "size": info.size,
        "hostname": info.hostname,
        "rendezvous_host": info.rendezvous_host or "",
        "rendezvous_port": int(info.rendezvous_port or 0),
        "secret": info.secret or "",
        "process_sets": [ps.ranks for ps in sets],
        "dynamic_process_sets": dynamic,
        "bundled_net_plugin": _plugin_path(),
        "nccl_library": _build_info.nccl_library(),
    }


def init_placed(info: Any, dynamic_process_sets: bool = False, flag_defaults: Optional[dict] = None,
                store: Any = None, store_prefix: str = "") -> None:
    """Start lightcc at a place another front has agreed (a LaunchInfo), without a launcher's help.

    The torch.distributed backend's path: torch gave rank, size and a store every rank shares.
    With `store` (torch's Store API: set, get, add, check) the engine meets through it, under keys
    starting with `store_prefix` (fresh for each init), and no rank serves a store of its own;
    the store is used during this call only. Without it, `info` names rank 0's rendezvous address.
    `flag_defaults` (flag name -> text) stand in for flags the environment leaves unset, e.g.
    LIGHTCC_TIMEOUT from the group's timeout.
    """
    c = core()
    if c.is_initialized():
        raise ValueError("lightcc is already initialized; call shutdown() first")
    c.init({**_engine_options(info, [], dynamic_process_sets), "flag_defaults": dict(flag_defaults or {}),
            "store": store, "store_prefix": store_prefix})
    _ps._reset()
    from lightcc.common.env_names import warn_unread

    warn_unread(c.rank(), (f["name"] for f in c.flags()))


def _is_mpi_comm(comm: Any) -> bool:
    return type(comm).__module__.startswith("mpi4py")


def _subset_info(info: Any, comm: Any) -> Any:
    """Horovod's ``init(comm=[ranks])``: the job is those launcher ranks, renumbered in list order.

    A rank that is not listed runs alone (size 1) with a warning: Horovod falls back to
    MPI_COMM_WORLD there, which cannot meet the listed ranks' smaller job and would hang.
    Only one such subset may initialise per job (the subset shares the job's rendezvous store).
    """
    import dataclasses
    import warnings

    try:
        ranks = [int(r) for r in comm]
    except TypeError:
        raise ValueError(f"comm must be a list of ranks or an mpi4py communicator, got {comm!r}") from None
    if not ranks:
        return info  # Horovod treats [] as "every rank"
    if len(set(ranks)) != len(ranks) or min(ranks) < 0 or max(ranks) >= info.size:
        raise ValueError(f"comm={ranks} must list distinct ranks in [0, {info.size}) (the launcher's job size)")
    if info.rank not in ranks:
        warnings.warn(f"rank {info.rank} is not in init(comm={ranks}); it runs alone (size 1)")
        return dataclasses.replace(info, rank=0, size=1, local_rank=0, local_size=1, cross_rank=0, cross_size=1,
                                   rendezvous_host="", rendezvous_port=0)
    return dataclasses.replace(info, rank=ranks.index(info.rank), size=len(ranks), local_rank=-1, local_size=-1,
                               cross_rank=-1, cross_size=-1)


def shutdown() -> None:
    """Stop the engine on every rank (pending operations fail); init() may be called again."""
    core().shutdown()
    _ps._reset()


atexit.register(lambda: core().shutdown() if core().is_initialized() else None)


def is_initialized() -> bool:
    """Whether init() has run (and shutdown() has not)."""
    return bool(core().is_initialized())


def _check() -> Any:
    c = core()
    if not c.is_initialized():
        raise ValueError(NOT_INITIALIZED)
    return c


def size() -> int:
    """Number of processes in the job."""
    return _check().size()


def local_size() -> int:
    """Number of processes on this host."""
    return _check().local_size()


def cross_size() -> int:
    """Number of hosts that have a process with this local rank."""
    return _check().cross_size()


def rank() -> int:
    """This process's global rank."""
    return _check().rank()


def local_rank() -> int:
    """This process's rank among the processes on its host."""
    return _check().local_rank()


def cross_rank() -> int:
    """This host's index among the hosts that have this local rank."""
    return _check().cross_rank()


def is_homogeneous() -> bool:
    """Whether every host runs the same number of processes."""
    return bool(_check().is_homogeneous())


def overlap_backward() -> bool:
    """Whether gradient collectives should start during the backward pass (LIGHTCC_OVERLAP).

    The engine decides at init: not where every rank is on this host and this rank has one
    core, which its compute and its shared-memory collectives could only share; the fronts'
    optimizers then start a step's collectives together when the step waits for them.
    """
    return bool(_check().overlap_backward())


def start_timeline(file_path: str, mark_cycles: bool = False) -> None:
    """Start writing a Chrome-trace timeline (rank 0 writes it)."""
    _check().start_timeline(str(file_path), bool(mark_cycles))


def stop_timeline() -> None:
    """Stop and close the timeline."""
    _check().stop_timeline()


def mpi_threads_supported() -> bool:
    """lightcc does not use MPI for collectives; kept for Horovod compatibility."""
    _check()
    return False


def mpi_enabled() -> bool:
    """False: collectives run on lightcc's engine, MPI is only a launcher."""
    return False


def mpi_built() -> bool:
    """False: lightcc is not built against MPI."""
    return False


def gloo_enabled() -> bool:
    """False: lightcc does not use gloo."""
    return False


def gloo_built() -> bool:
    """False: lightcc does not use gloo."""
    return False


def nccl_built() -> int:
    """NCCL version code when a NCCL library can be loaded here, else 0."""
    from lightcc.common import build_info

    return build_info.nccl_version()


def ddl_built() -> bool:
    """False: no IBM DDL."""
    return False


def ccl_built() -> bool:
    """False: no oneCCL."""
    return False


def cuda_built() -> bool:
    """Whether lightcc's CUDA kernels were compiled into this install."""
    from lightcc.common import build_info

    return build_info.cuda_built()


def rocm_built() -> bool:
    """False: no ROCm."""
    return False
