"""Training frameworks that make the process group themselves, over the "lightcc" backend: Lightning,
Accelerate (torchrun) and Ray Train, each running its example script at 2 ranks on CPU."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.ranks import ROOT, free_port

EXAMPLES = ROOT / "examples" / "pytorch"


def _run(cmd: list[str], timeout: float, cwd: str) -> str:
    """Runs `cmd` in a session of its own; a hang past `timeout` kills the session and fails."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMPI_", "PMI_", "HOROVOD_", "LIGHTCC_", "SLURM", "PET_", "TORCHELASTIC_", "PL_"))
           and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env.update({"PYTHONPATH": f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}", "PYTHONUNBUFFERED": "1",
                "OMP_NUM_THREADS": "1", "LIGHTCC_TIMEOUT": "60"})
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out = proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{cmd[1:3]} hung past {timeout} s") from None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, out[-4000:]
    return out


def test_lightning_ddp_strategy(tmp_path):
    """Trainer(strategy=DDPStrategy(process_group_backend="lightcc")): Lightning starts the second
    process itself and the group is lightcc's; both ranks end with one-process training's weights."""
    pytest.importorskip("lightning")
    out = _run([sys.executable, str(EXAMPLES / "lightning_ddp.py"), "--backend", "lightcc"], 300, str(tmp_path))
    assert out.count("(lightcc, pid") == 2 and out.count(" 0 failed") == 2, out[-4000:]


def test_accelerate_adopts_the_lightcc_group(tmp_path):
    pytest.importorskip("accelerate")
    port = free_port()
    out = _run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
                "--master-port", str(port), str(EXAMPLES / "accelerate_ddp.py")], 300, str(tmp_path))
    assert out.count("(lightcc, pid") == 2 and out.count(" 0 failed") == 2, out[-4000:]


@pytest.mark.long  # a local Ray cluster takes a minute or two to start and stop on two cores
def test_ray_train_torch_config_backend(tmp_path):
    """TorchTrainer(torch_config=TorchConfig(backend="lightcc")): Ray's workers make the group."""
    pytest.importorskip("ray.train")
    out = _run([sys.executable, str(EXAMPLES / "ray_train_ddp.py"), "--node-ip", "127.0.0.1"], 500, str(tmp_path))
    assert "driver: 2 workers trained over lightcc; 0 failed" in out, out[-4000:]

