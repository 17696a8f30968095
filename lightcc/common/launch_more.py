"""The launchers that know nothing of lightcc: torchrun/TorchElastic, SLURM's srun and Kubeflow's PET_*.

Each gives ranks and sizes but no lightcc rendezvous, so rank 0 picks one (its address toward the
others, a free port, a fresh 256-bit secret unless ``LIGHTCC_JOB_SECRET`` is set) and hands it over:

- torchrun (``RANK``/``WORLD_SIZE``/``LOCAL_*``/``GROUP_*``, ``MASTER_ADDR``/``MASTER_PORT``,
  ``TORCHELASTIC_*``; also the same variables from Kubeflow's PyTorchJob): through the c10d
  TCPStore at ``MASTER_ADDR:MASTER_PORT``, connected as ``init_process_group('env://')`` would be
  (the agent's store under torchrun; rank 0 hosts it, multi-tenant, otherwise), under a key
  named after the run id and restart count so a restarted job never reads an earlier offer.
- srun (``SLURM_PROCID``, ``SLURM_STEP_NUM_TASKS``/``SLURM_NTASKS``, ``SLURM_LOCALID``,
  ``SLURM_NODEID``, ``SLURM_STEP_NODELIST``/``SLURM_JOB_NODELIST``, ``SLURM_STEP_TASKS_PER_NODE``):
  through a rendezvous file only the job's user can read (``LIGHTCC_RENDEZVOUS_FILE``; else in the
  temp directory when the step has one node, else in ``SLURM_SUBMIT_DIR``), named after the job
  and step.
- ``PET_*`` alone (Kubeflow Trainer's torch runtime without torchrun): not enough to meet; init
  says so.

A launcher whose variables say there are several processes but lack what lightcc needs makes
:func:`detect` raise, naming the launcher and what is missing: never a silent job of one.
torch is imported only on the torchrun path.
"""
from __future__ import annotations

import os
import re
import secrets
import tempfile
from typing import Any, Mapping

from lightcc.common import launch_info as le
from lightcc.common.rendezvous_file import detect_with_file

TORCHRUN = le.Names(
    "torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", None
)
PET_VARS = ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT")
STORE_TIMEOUT_S = le.RENDEZVOUS_FILE_TIMEOUT_S
# The c10d stores this process opened: rank 0 may host one (no agent store), which must outlive
# init so the other ranks can read the offer, and a later init_process_group may share it.
_OPEN_STORES: dict = {}


def detect(env: Mapping[str, str]) -> le.LaunchInfo | None:
    """This process's place under torchrun, srun or Kubeflow; ``None`` when none of them started it."""
    if TORCHRUN.rank in env or TORCHRUN.size in env:
        return le.detect_from(TORCHRUN, env, _torch_store_exchange)
    if "SLURM_PROCID" in env or "SLURM_STEP_NUM_TASKS" in env:
        return _detect_slurm(env)
    if any(name in env for name in PET_VARS):
        _check_pet_alone(env)
    return None


def _launcher_name(env: Mapping[str, str]) -> str:
    return "torchrun" if "TORCHELASTIC_RUN_ID" in env else "a torch.distributed launcher (RANK/WORLD_SIZE)"


def _torch_store_exchange(
    names: le.Names, env: Mapping[str, str], rank: int, size: int, local: le.Pair, cross: le.Pair, hostname: str
) -> le.LaunchInfo:
    """Rank 0 puts ``host port secret`` into the launcher's c10d store; the others read it."""
    who = _launcher_name(env)
    missing = [v for v in ("MASTER_ADDR", "MASTER_PORT") if not env.get(v)]
    if missing:
        raise ValueError(
            f"launched by {who} (WORLD_SIZE={size}) without {' and '.join(missing)}: lightcc meets through "
            f"the launcher's store at MASTER_ADDR:MASTER_PORT; set them, or set {le.RENDEZVOUS_ADDR_VAR}=host:port "
            f"of rank 0 and {le.JOB_SECRET_VAR} for every rank"
        )
    master, port_text = env["MASTER_ADDR"], env["MASTER_PORT"]
    master_port = le.int_var(env, "MASTER_PORT", minimum=1)
    store = _c10d_store(env, who, master, master_port, rank, size)
    run = env.get("TORCHELASTIC_RUN_ID", "none")
    key = f"lightcc/rendezvous/{run}/{env.get('TORCHELASTIC_RESTART_COUNT', '0')}"
    where = f"{who}'s store {master}:{port_text} (key {key!r}) within {STORE_TIMEOUT_S:g} s"
    rendezvous = meet_through_store(store, key, rank, env, toward=master, where=where)
    return le.placed(names.launcher, rank, size, local, cross, hostname, rendezvous)


def meet_through_store(store: Any, key: str, rank: int, env: Mapping[str, str], toward: str,
                       where: str) -> tuple[str, int, str]:
    """Rank 0 offers ``host port secret`` under `key` in a torch store; every rank reads it back.

    The address is rank 0's route toward `toward` (the store's host). A secret every rank was
    given stays off the (unauthenticated) store: the offer says "-", "use yours". ValueError
    names `where` when the offer does not come, or when only some ranks have a secret.
    """
    if rank == 0:
        host = le.routable_address(env, toward=toward)
        offer = f"{host} {le.free_port()} {'-' if env.get(le.JOB_SECRET_VAR) else secrets.token_hex(32)}"
        store.set(key, offer)
    try:
        fields = store.get(key).decode().split()
    except Exception as err:  # noqa: BLE001  (torch raises DistStoreError or RuntimeError on a timeout)
        raise ValueError(f"rank {rank}: rank 0 did not publish lightcc's rendezvous in {where}: {err}") from None
    host, port, secret = fields[0], int(fields[1]), fields[2]
    if secret == "-":
        secret = env.get(le.JOB_SECRET_VAR, "")
        if not secret:
            raise ValueError(f"rank {rank}: rank 0 was given {le.JOB_SECRET_VAR} but this rank was not; set it on every rank")
    return host, port, secret


def _c10d_store(env: Mapping[str, str], who: str, master: str, port: int, rank: int, size: int):
    """The store ``init_process_group('env://')`` would use, so a later one shares it."""
    try:
        from datetime import timedelta

        from torch.distributed import TCPStore
    except ImportError:
        raise ValueError(
            f"launched by {who} (WORLD_SIZE={size}), but torch.distributed is not importable to reach its "
            f"store; install torch, or set {le.RENDEZVOUS_ADDR_VAR}=host:port of rank 0 and "
            f"{le.JOB_SECRET_VAR} for every rank"
        ) from None
    agent_store = env.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    if (master, port) in _OPEN_STORES:
        return _OPEN_STORES[(master, port)]
    try:
        store = TCPStore(
            master,
            port,
            size,
            is_master=rank == 0 and not agent_store,
            timeout=timedelta(seconds=STORE_TIMEOUT_S),
            wait_for_workers=False,
            multi_tenant=True,
        )
    except Exception as err:  # noqa: BLE001  (torch's own errors: name the launcher and address instead)
        raise ValueError(f"rank {rank}: cannot reach {who}'s store at {master}:{port}: {err}") from None
    _OPEN_STORES[(master, port)] = store
    return store


def expand_nodelist(text: str) -> list[str]:
    """SLURM's compressed host list, e.g. ``gpu[01-03,7],login`` -> gpu01 gpu02 gpu03 gpu7 login.

    Raises:
        ValueError: unbalanced brackets or a malformed range.
    """
    hosts: list[str] = []
    for item in _split_top(text.strip()):
        match = re.fullmatch(r"([^\[\]]*)\[([^\[\]]+)\]([^\[\]]*)", item)
        if match is None:
            if "[" in item or "]" in item:
                raise ValueError(f"SLURM node list {text!r}: cannot read {item!r}")
            hosts.append(item)
            continue
        prefix, ranges, suffix = match.groups()
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            if not lo.isdigit() or (hi and not hi.isdigit()):
                raise ValueError(f"SLURM node list {text!r}: {part!r} is not a number or range")
            width = len(lo)
            for n in range(int(lo), int(hi or lo) + 1):
                hosts.append(f"{prefix}{n:0{width}d}{suffix}")
    return hosts


def _split_top(text: str) -> list[str]:
    """Splits on commas outside brackets."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if depth < 0 or depth > 1:
            raise ValueError(f"SLURM node list {text!r}: unbalanced brackets")
        if ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if depth:
        raise ValueError(f"SLURM node list {text!r}: unbalanced brackets")
    items.append(text[start:])
    return [item for item in items if item]


def expand_tasks_per_node(text: str) -> list[int]:
    """SLURM's ``2(x3),1`` -> [2, 2, 2, 1]."""
    counts: list[int] = []
    for part in text.split(","):
        match = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
        if match is None:
            raise ValueError(f"SLURM tasks per node {text!r}: cannot read {part!r}")
        counts += [int(match.group(1))] * int(match.group(2) or 1)
    return counts


def _slurm_var(env: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        if env.get(name):
            return name
    return None


def _detect_slurm(env: Mapping[str, str]) -> le.LaunchInfo:
    size_var = _slurm_var(env, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS")
    if size_var is None:
        raise ValueError("launched by SLURM (SLURM_PROCID is set) but neither SLURM_STEP_NUM_TASKS nor SLURM_NTASKS is")
    size = le.int_var(env, size_var, minimum=1)
    if size > 1 and "SLURM_STEP_ID" not in env:
        raise ValueError(
            f"SLURM says {size_var}={size} but this process was not started by srun (no SLURM_STEP_ID): "
            "run each rank with `srun python ...` inside the allocation, or use lightccrun/mpirun"
        )
    rank = le.ranked(env, "SLURM_PROCID", size, size_var) if "SLURM_PROCID" in env else 0
    if size == 1:
        return le.finish(le.SINGLE, env, rank=0, size=1, local=(0, 1), cross=(0, 1), hostname=_host(env))
    nodes_var = _slurm_var(env, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")
    per_node_var = _slurm_var(env, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE")
    missing = [n for n, v in (("SLURM_STEP_NODELIST", nodes_var), ("SLURM_STEP_TASKS_PER_NODE", per_node_var),
                              ("SLURM_NODEID", "SLURM_NODEID" if "SLURM_NODEID" in env else None),
                              ("SLURM_LOCALID", "SLURM_LOCALID" if "SLURM_LOCALID" in env else None)) if v is None]
    if missing:
        raise ValueError(f"launched by srun ({size_var}={size}) but {', '.join(missing)} not set; srun sets them all")
    nodes = expand_nodelist(env[nodes_var])
    per_node = expand_tasks_per_node(env[per_node_var])
    node = le.int_var(env, "SLURM_NODEID", minimum=0)
    if node >= len(nodes) or node >= len(per_node) or sum(per_node) != size:
        raise ValueError(
            f"srun: SLURM_NODEID={node}, {nodes_var}={env[nodes_var]!r} ({len(nodes)} nodes) and "
            f"{per_node_var}={env[per_node_var]!r} (sum {sum(per_node)}) do not describe {size_var}={size}"
        )
    local_size = per_node[node]
    local_rank = le.ranked(env, "SLURM_LOCALID", local_size, f"{per_node_var}[{node}]")
    uniform = len(set(per_node)) == 1  # cross rank/size mean "same local rank on each node" only then
    cross = (node, len(nodes)) if uniform else (le.UNKNOWN, le.UNKNOWN)
    hostname = _host(env) if len(nodes) > 1 else nodes[0]
    if le.RENDEZVOUS_ADDR_VAR in env:
        return le.finish(_slurm_names(), env, rank=rank, size=size, local=(local_rank, local_size),
                          cross=cross, hostname=hostname)
    job = f"slurm-{env.get('SLURM_JOB_ID', '?')}.{env.get('SLURM_STEP_ID', '?')}"
    path = _slurm_rendezvous_path(env, job, single_node=len(nodes) == 1, size_var=size_var, size=size)
    return detect_with_file("slurm", env, rank, size, (local_rank, local_size), cross, hostname, path, job)


def _slurm_names() -> le.Names:
    return le.Names("slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", None, "SLURM_NODEID", None, None)


def _host(env: Mapping[str, str]) -> str:
    import socket

    return env.get("SLURMD_NODENAME") or socket.gethostname()


def _slurm_rendezvous_path(env: Mapping[str, str], job: str, single_node: bool, size_var: str, size: int) -> str:
    if env.get(le.RENDEZVOUS_FILE_VAR):
        return env[le.RENDEZVOUS_FILE_VAR]
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in job)
    if single_node:
        return os.path.join(tempfile.gettempdir(), f"lightcc-rendezvous-{safe}")
    if env.get("SLURM_SUBMIT_DIR"):
        return os.path.join(env["SLURM_SUBMIT_DIR"], f".lightcc-rendezvous-{safe}")
    raise ValueError(
        f"launched by srun ({size_var}={size}) on several nodes without SLURM_SUBMIT_DIR or "
        f"{le.RENDEZVOUS_FILE_VAR}: set {le.RENDEZVOUS_FILE_VAR} to a path on a file system every node shares"
    )


def _check_pet_alone(env: Mapping[str, str]) -> None:
    """Kubeflow's torch runtime variables without torchrun's: fine for one process, else an error."""
    nnodes = env.get("PET_NNODES", "1")
    nproc = env.get("PET_NPROC_PER_NODE", "1")
    try:
        total = int(nnodes.split(":")[-1]) * (int(nproc) if nproc.isdigit() else 2)
    except ValueError:
        total = 2
    if total > 1:
        raise ValueError(
            f"launched by Kubeflow Trainer's torch runtime (PET_NNODES={nnodes}, PET_NPROC_PER_NODE={nproc}) but "
            "without torchrun: RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT are missing; start the trainer "
            "through torchrun (the runtime's command does), or use the lightcc MPI runtime"
        )
