"""NCCL through HARP (lightcc's net plugin) between two ranks sharing the GPU: HARP is really used, sums are right."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from tests.ranks import ROOT


def test_harp_nccl_allreduce(tmp_path):
    cmd = [sys.executable, "-m", "benchmarks.gpu.nccl_net", "--configs", "harp", "--sizes-mib", "1,16",
           "--out", str(tmp_path)]
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # its NCCL ranks too
        out, err = proc.communicate()
        raise AssertionError(f"{' '.join(cmd)} still running after 120 s:\n{out[-4000:]}\n{err[-4000:]}") from None
    output = f"{' '.join(cmd)} exited {proc.returncode}\n{out[-4000:]}\n{err[-4000:]}"
    assert proc.returncode == 0, output
    results = json.loads((tmp_path / "nccl_net.json").read_text())
    harp = [r for r in results if r["config"] == "harp"]
    assert len(harp) == 1, f"no harp result in nccl_net.json:\n{output}"
    res = harp[0]
    detail = f"{json.dumps(res, indent=1)[-4000:]}\n{output}"
    assert res["returncodes"] == [0, 0], f"NCCL ranks failed: {detail}"
    assert res["network_used"] == "HARP", f"NCCL used network {res['network_used']!r}, not HARP: {detail}"
    assert res.get("correct") is True, f"allreduce through HARP gave a wrong sum: {detail}"
