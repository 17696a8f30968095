"""NCCL through HARP (lightcc's net plugin) between two ranks sharing the GPU: HARP is really used, sums are right."""
from __future__ import annotations

import json
import sys

from testbed import procs


def test_harp_nccl_allreduce(tmp_path):
    cmd = [sys.executable, "-m", "benchmarks.gpu.nccl_net", "--configs", "harp", "--sizes-mib", "1,16",
           "--out", str(tmp_path)]
    proc = procs.run(cmd, 120)  # a hang fails with the stacks of the bench and its NCCL ranks
    output = f"{' '.join(cmd)} exited {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, output
    results = json.loads((tmp_path / "nccl_net.json").read_text())
    harp = [r for r in results if r["config"] == "harp"]
    assert len(harp) == 1, f"no harp result in nccl_net.json:\n{output}"
    res = harp[0]
    detail = f"{json.dumps(res, indent=1)[-4000:]}\n{output}"
    assert res["returncodes"] == [0, 0], f"NCCL ranks failed: {detail}"
    assert res["network_used"] == "HARP", f"NCCL used network {res['network_used']!r}, not HARP: {detail}"
    assert res.get("correct") is True, f"allreduce through HARP gave a wrong sum: {detail}"
