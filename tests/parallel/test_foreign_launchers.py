"""lightcc started by launchers that know nothing of it: torchrun (one host and two emulated hosts,
restarts resuming from lightcc.checkpoint) and srun-shaped environments on two emulated hosts."""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Sequence

import pytest

from testbed import netns, procs
from tests.ranks import ROOT, WORKERS, free_port

NEEDS_NETNS = pytest.mark.skipif(netns.unavailable() is not None, reason=str(netns.unavailable()))
TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """testbed/procs.py's rule (no launcher's or lightcc's variables of this process), one OpenMP thread."""
    return procs.base_env({"OMP_NUM_THREADS": "1", "LIGHTCC_TIMEOUT": "60", **(extra or {})})


def _run_all(cmds: Sequence[list[str]], envs: Sequence[dict[str, str]], timeout: float) -> list[str]:
    """Runs every command at once (testbed/procs.py); a hang past `timeout` stops them all and fails."""
    done = procs.run_all(cmds, envs, timeout, merge=True)
    for res in done:
        assert res.returncode == 0, res.stdout[-4000:]
    return [res.stdout for res in done]


def _in_host(h: netns.Hosts, i: int, cmd: list[str]) -> list[str]:
    """`cmd` on emulated host i, under a host name of its own (a UTS namespace), as on a real node."""
    return [*h.prefix(i), "unshare", "--uts", "sh", "-c", f'hostname node{i} && exec "$@"', "sh", *cmd]


def test_torchrun_standalone_is_one_job():
    out = _run_all([[*TORCHRUN, "--standalone", "--nproc-per-node", "2", str(WORKERS / "launched_worker.py"),
                     "2", "1"]], [_env()], timeout=240)[0]
    assert out.count(" 0 failed") == 2, out


@NEEDS_NETNS
def test_torchrun_on_two_emulated_hosts():
    with netns.hosts(2) as h:
        port = free_port()
        cmds = [_in_host(h, i, [*TORCHRUN, "--nnodes=2", "--nproc-per-node=2", f"--node-rank={i}",
                                f"--master-addr={h.addrs[0]}", f"--master-port={port}",
                                str(WORKERS / "launched_worker.py"), "2", "2"]) for i in range(2)]
        env = _env({"HARP_IFNAME": h.ifname, "HARP_NFLOWS": "2", "HARP_NINSTANCES": "1"})
        outs = _run_all(cmds, [env, env], timeout=300)
    assert sum(o.count(" 0 failed") for o in outs) == 4, outs


@NEEDS_NETNS
def test_torchrun_ddp_over_the_lightcc_backend_on_two_emulated_hosts():
    """The DDP example with init_process_group("lightcc"), 2 hosts x 2 ranks: HARP between the hosts."""
    with netns.hosts(2) as h:
        port = free_port()
        cmds = [_in_host(h, i, [*TORCHRUN, "--nnodes=2", "--nproc-per-node=2", f"--node-rank={i}",
                                f"--master-addr={h.addrs[0]}", f"--master-port={port}",
                                str(ROOT / "examples" / "pytorch" / "pytorch_ddp.py"), "--steps", "5"])
                for i in range(2)]
        env = _env({"HARP_IFNAME": h.ifname, "HARP_NFLOWS": "2", "HARP_NINSTANCES": "1"})
        outs = _run_all(cmds, [env, env], timeout=300)
    text = "".join(outs)
    assert text.count("(lightcc, node") == 4 and text.count(" 0 failed") == 4, text[-4000:]


@NEEDS_NETNS
def test_srun_shaped_job_on_two_emulated_hosts(tmp_path):
    with netns.hosts(2) as h:
        cmds, envs = [], []
        for rank in range(4):
            node = rank // 2
            cmds.append(_in_host(h, node, [sys.executable, str(WORKERS / "launched_worker.py"), "2", "2"]))
            envs.append(_env({
                "SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0", "SLURM_PROCID": str(rank), "SLURM_NTASKS": "4",
                "SLURM_STEP_NUM_TASKS": "4", "SLURM_LOCALID": str(rank % 2), "SLURM_NODEID": str(node),
                "SLURM_JOB_NODELIST": "node[0-1]", "SLURM_STEP_NODELIST": "node[0-1]",
                "SLURM_STEP_TASKS_PER_NODE": "2(x2)", "SLURM_TASKS_PER_NODE": "2(x2)",
                "SLURMD_NODENAME": f"node{node}", "SLURM_SUBMIT_DIR": str(tmp_path),
                # Emulated nodes' names do not resolve: name the interface, as on a multi-NIC node.
                "HOROVOD_GLOO_IFACE": h.ifname, "HARP_IFNAME": h.ifname, "HARP_NFLOWS": "2",
                "HARP_NINSTANCES": "1"}))
        outs = _run_all(cmds, envs, timeout=300)
    assert sum(o.count(" 0 failed") for o in outs) == 4, outs
    assert not list(tmp_path.glob(".lightcc-rendezvous-*")), "rank 0 removes the rendezvous file at exit"


# Ranks share torchrun's stdout and print's newline is a write of its own, so two ranks' lines
# can run together ("...digestFINAL 2 ..."): match the digest by its length, not by line.
FINAL = r"FINAL (\d) ([0-9a-f]{64})"


def _checkpoint_run(directory: Path, restarts: int, crash: int) -> str:
    cmd = [*TORCHRUN, "--standalone", "--nproc-per-node", "3", f"--max-restarts={restarts}",
           str(WORKERS / "checkpoint_worker.py"), str(directory), "23", str(crash), "5"]
    return _run_all([cmd], [_env({"LIGHTCC_TIMEOUT": "10"})], timeout=300)[0]


def test_torchrun_max_restarts_resume_from_checkpoint(tmp_path):
    pytest.importorskip("torch")
    unbroken = dict(re.findall(FINAL, _checkpoint_run(tmp_path / "a", 0, -1)))
    assert len(unbroken) == 3 and len(set(unbroken.values())) == 1
    text = _checkpoint_run(tmp_path / "b", 1, 12)
    assert len(re.findall(r"RESUMED \d 10", text)) == 3, text[-4000:]  # all ranks agreed on step 10
    assert dict(re.findall(FINAL, text)) == unbroken  # model, optimizer, RNG and data came back

