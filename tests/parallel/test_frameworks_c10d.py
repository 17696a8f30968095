"""Training frameworks that make the process group themselves, over the "lightcc" backend: Lightning,
Accelerate (torchrun) and Ray Train, each running its example script at 2 ranks on CPU."""
from __future__ import annotations

import sys

import pytest

from testbed import procs
from tests.ranks import ROOT, free_port

EXAMPLES = ROOT / "examples" / "pytorch"


def _run(cmd: list[str], timeout: float, cwd: str) -> str:
    """Runs `cmd` in a session of its own (testbed/procs.py's rule and hard timeout); its output, or a failure."""
    res = procs.run(cmd, timeout, procs.base_env({"OMP_NUM_THREADS": "1", "LIGHTCC_TIMEOUT": "60"}), cwd, merge=True)
    assert res.returncode == 0, res.stdout[-4000:]
    return res.stdout


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

