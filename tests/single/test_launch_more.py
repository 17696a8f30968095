"""Tests lightcc.common.launch_more: torchrun, srun and Kubeflow PET_* variables, node lists, and the errors."""
from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from lightcc.common import launch_more
from lightcc.common.launch_env import detect, free_port
from testbed import procs

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("text, hosts", [
    ("node1", ["node1"]),
    ("a,b", ["a", "b"]),
    ("gpu[01-03,7]", ["gpu01", "gpu02", "gpu03", "gpu7"]),
    ("gpu[1-2],login,x[009-010]y", ["gpu1", "gpu2", "login", "x009y", "x010y"]),
    ("rack1-n[8-9]", ["rack1-n8", "rack1-n9"]),
])
def test_expand_nodelist(text, hosts):
    assert launch_more.expand_nodelist(text) == hosts


@pytest.mark.parametrize("text", ["gpu[1-2", "gpu1-2]", "gpu[a-b]", "g[[1]]"])
def test_expand_nodelist_rejects(text):
    with pytest.raises(ValueError, match="SLURM node list"):
        launch_more.expand_nodelist(text)


def test_expand_tasks_per_node():
    assert launch_more.expand_tasks_per_node("2(x3),1") == [2, 2, 2, 1]
    with pytest.raises(ValueError, match="tasks per node"):
        launch_more.expand_tasks_per_node("2x3")


def _srun_env(rank, tmp_path, **extra):
    env = {"SLURM_PROCID": str(rank), "SLURM_STEP_NUM_TASKS": "4", "SLURM_NTASKS": "4", "SLURM_STEP_ID": "0",
           "SLURM_JOB_ID": "77", "SLURM_STEP_NODELIST": "n[1-2]", "SLURM_STEP_TASKS_PER_NODE": "2(x2)",
           "SLURM_NODEID": str(rank // 2), "SLURM_LOCALID": str(rank % 2), "SLURMD_NODENAME": f"n{rank // 2 + 1}",
           "SLURM_SUBMIT_DIR": str(tmp_path)}
    env.update(extra)
    return env


def test_srun_ranks_meet_through_a_private_file(tmp_path):
    infos = {}
    threads = [threading.Thread(target=lambda r=r: infos.update({r: detect(environ=_srun_env(r, tmp_path))}))
               for r in (3, 1, 2)]
    for t in threads:
        t.start()
    zero = detect(environ=_srun_env(0, tmp_path))
    for t in threads:
        t.join(30)
    infos[0] = zero
    assert {(i.rank, i.size, i.local_rank, i.local_size, i.cross_rank, i.cross_size) for i in infos.values()} == {
        (0, 4, 0, 2, 0, 2), (1, 4, 1, 2, 0, 2), (2, 4, 0, 2, 1, 2), (3, 4, 1, 2, 1, 2)}
    offers = {(i.rendezvous_host, i.rendezvous_port, i.secret) for i in infos.values()}
    assert len(offers) == 1 and len(zero.secret) == 64 and zero.launcher == "slurm"
    path = tmp_path / ".lightcc-rendezvous-slurm-77.0"
    assert path.stat().st_mode & 0o077 == 0  # only the job's user can read the secret


def test_srun_uneven_nodes_leave_cross_unknown(tmp_path):
    env = _srun_env(2, tmp_path, SLURM_STEP_NUM_TASKS="3", SLURM_STEP_TASKS_PER_NODE="2,1", SLURM_LOCALID="0",
                    SLURM_NODEID="1", LIGHTCC_RENDEZVOUS_ADDR="h:1", LIGHTCC_JOB_SECRET="s")
    info = detect(environ=env)
    assert (info.rank, info.size, info.local_rank, info.local_size, info.cross_rank) == (2, 3, 0, 1, -1)


@pytest.mark.parametrize("extra, message", [
    ({"SLURM_STEP_ID": None}, "not started by srun"),
    ({"SLURM_NODEID": None}, "SLURM_NODEID not set"),
    ({"SLURM_STEP_TASKS_PER_NODE": "2,1"}, "do not describe"),
    ({"SLURM_LOCALID": "2"}, "SLURM_LOCALID=2 is out of range"),
    ({"SLURM_STEP_NODELIST": "n[1-2", "LIGHTCC_RENDEZVOUS_ADDR": "h:1"}, "unbalanced"),
    ({"SLURM_SUBMIT_DIR": None}, "LIGHTCC_RENDEZVOUS_FILE"),
])
def test_srun_errors_name_what_is_missing(tmp_path, extra, message):
    env = _srun_env(1, tmp_path)
    for key, value in extra.items():
        if value is None:
            env.pop(key)
        else:
            env[key] = value
    with pytest.raises(ValueError, match=message):
        detect(environ=env)


def test_srun_single_task_is_a_job_of_one():
    info = detect(environ={"SLURM_PROCID": "0", "SLURM_NTASKS": "1"})
    assert (info.rank, info.size, info.rendezvous_port) == (0, 1, 0)


def test_torchrun_without_master_names_torchrun():
    env = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "TORCHELASTIC_RUN_ID": "x"}
    with pytest.raises(ValueError, match=r"launched by torchrun \(WORLD_SIZE=2\) without MASTER_ADDR and MASTER_PORT"):
        detect(environ=env)


def test_torchrun_world_of_one_needs_no_store():
    info = detect(environ={"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1"})
    assert (info.launcher, info.size, info.local_size) == ("torchrun", 1, 1)


def test_torchrun_explicit_rendezvous_wins():
    env = {"RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "0",
           "GROUP_WORLD_SIZE": "2", "LIGHTCC_RENDEZVOUS_ADDR": "10.0.0.1:4000", "LIGHTCC_JOB_SECRET": "s"}
    info = detect(environ=env)
    assert (info.rank, info.local_rank, info.cross_rank, info.cross_size, info.rendezvous_port) == (1, 1, 0, 2, 4000)


@pytest.mark.parametrize("given", ["", "secret-from-a-k8s-secret"])
def test_torch_store_carries_the_offer_between_processes(given):
    """Rank 0 (no agent store) hosts the c10d store on MASTER_PORT; rank 1, another process, reads the offer.
    A secret given to every rank is used as is and stays off the store."""
    pytest.importorskip("torch")
    port = free_port("127.0.0.1")
    code = ("import sys; from lightcc.common.launch_env import detect; i = detect(); "
            "print(i.rank, i.rendezvous_host, i.rendezvous_port, i.secret, flush=True); sys.stdin.read()")
    ranks = []
    for rank in (0, 1):
        env = procs.base_env({"RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": "2",
                              "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                              **({"LIGHTCC_JOB_SECRET": given} if given else {})}, (ROOT,))
        ranks.append(procs.start(procs.python("-c", code), env, stdin=subprocess.PIPE))
    try:
        lines = [p.stdout.readline().split() for p in ranks]
        for p in ranks:
            p.stdin.close()  # rank 0 hosts the store until then
        outs, hung = procs.wait(ranks, 60)  # a rank still running then dumps its stacks and is killed
    finally:
        procs.stop_all(ranks, dump=False)
    assert not hung, outs
    assert all(len(line) == 4 for line in lines), outs
    assert lines[0][1:] == lines[1][1:] and lines[0][1] == "127.0.0.1"
    assert lines[0][3] == given if given else len(lines[0][3]) == 64


def test_pet_without_torchrun_fails_naming_kubeflow():
    with pytest.raises(ValueError, match="Kubeflow Trainer's torch runtime .* without torchrun"):
        detect(environ={"PET_NNODES": "2", "PET_NPROC_PER_NODE": "1", "PET_NODE_RANK": "0"})
    assert detect(environ={"PET_NNODES": "1", "PET_NPROC_PER_NODE": "1"}).size == 1


def test_mpi_wins_over_slurm_and_torchrun_over_slurm():
    env = {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "1", "SLURM_PROCID": "3", "SLURM_NTASKS": "4"}
    assert detect(environ=env).launcher == "mpi"
    env = {"RANK": "0", "WORLD_SIZE": "1", "SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_STEP_ID": "0"}
    assert detect(environ=env).launcher == "torchrun"
