"""torch.distributed's "lightcc" backend with real ranks: every collective, DDP, subgroups, restart in process."""
from __future__ import annotations

import pytest

from tests.ranks import ROOT, free_port, run_ranks


@pytest.mark.parametrize("size", [2, 3])
def test_every_collective_ddp_and_reinit(size):
    results = run_ranks("torch_c10d_worker.py", size, args=[f"{free_port()},{free_port()}"], timeout=240)
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout + res.stderr


def test_every_collective_through_the_device_executor():
    """The path CUDA tensors take (engine/device_executor.cc's schedules, NCCL's place taken by the
    host implementation of the device interface) on CPU ranks, three of them: every collective,
    point-to-point, DDP and the restart, as above."""
    results = run_ranks("torch_c10d_worker.py", 3, args=[f"{free_port()},{free_port()}"], timeout=240,
                        env={"LIGHTCC_DEVICE_EXECUTOR": "host"})
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout + res.stderr


@pytest.mark.parametrize("size", [pytest.param(2, marks=pytest.mark.long), 3])  # CI: the odd size
def test_receive_from_any_source_with_the_flag(size):
    """LIGHTCC_P2P_ANY_SOURCE=1: recv/irecv(src=None) learn every sender, mixed with named receives and
    on a subgroup; without the flag the receive raises naming it."""
    results = run_ranks("torch_c10d_any_source_worker.py", size, args=[str(free_port()), "on"], timeout=120,
                        env={"LIGHTCC_P2P_ANY_SOURCE": "1"})
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout + res.stderr
    results = run_ranks("torch_c10d_any_source_worker.py", 2, args=[str(free_port()), "off"], timeout=120)
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout + res.stderr


def test_the_gpu_workers_checks_on_cpu_tensors_through_the_device_executor():
    """tests/gpu's c10d worker (run on CUDA tensors where a GPU is) on CPU tensors, host-mode device executor."""
    worker = ROOT / "tests" / "gpu" / "workers" / "torch_c10d_gpu_worker.py"
    results = run_ranks(str(worker), 3, args=["cpu", str(free_port())], timeout=180,
                        env={"LIGHTCC_DEVICE_EXECUTOR": "host"})
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout + res.stderr


def test_secret_made_when_the_launcher_gave_none():
    """Without LIGHTCC_JOB_SECRET rank 0 makes one and hands it over in torch's store."""
    results = run_ranks("torch_c10d_worker.py", 2, args=[f"{free_port()},{free_port()}"], timeout=240,
                        env={"LIGHTCC_JOB_SECRET": ""})
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout + res.stderr


def test_members_issuing_different_collectives_raise_within_the_timeout():
    """c10d's order contract broken (each rank all-reduces another size): not a hang but an error on
    every rank, naming the ranks that did not issue the call, within the group's timeout."""
    results = run_ranks("torch_c10d_mismatch_worker.py", 3, args=[str(free_port()), "5"], timeout=120)
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout + res.stderr


def test_rank_killed_during_ddp_training_is_named_by_every_survivor():
    timeout = 8
    results = run_ranks("torch_c10d_kill_worker.py", 3, args=[str(free_port()), "1", "5"], timeout=120,
                        env={"LIGHTCC_TIMEOUT": str(timeout)}, expect_ok=False)
    survivors = [r for r in results if r.rank != 1]
    for res in survivors:
        assert res.returncode == 0, res.stdout + res.stderr
        line = next((l for l in res.stdout.splitlines() if l.startswith("RAISED ")), None)
        assert line is not None, res.stdout + res.stderr
        seconds = float(line.split()[1])
        assert seconds < timeout + 5, line  # within LIGHTCC_TIMEOUT (plus the step in flight)
        assert "rank 1" in line, line
