"""Runs the GPU smoke worker at 2 ranks (dense, top-k) and 4 ranks (2D, 2D + top-k) sharing one GPU."""
from __future__ import annotations

import sys
from pathlib import Path

from tests.ranks import TOPK_BARE, run_ranks

WORKER = str(Path(__file__).resolve().parent / "worker.py")
CASES = [
    (2, {}),
    (3, {}),
    (2, {**TOPK_BARE, "LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_THRESHOLD": "262144"}),
    (4, {"LIGHT_2D_ALLREDUCE": "1", "LIGHT_INTRA_SIZE": "2"}),
    (4, {**TOPK_BARE, "LIGHT_2D_ALLREDUCE": "1", "LIGHT_INTRA_SIZE": "2", "LIGHT_TOPK_ALLREDUCE": "1",
         "LIGHT_TOPK_THRESHOLD": "262144"}),
]

bad = 0
for size, env in CASES:
    env = dict(env, LIGHTCC_TIMEOUT="60", HARP_IFNAME="=lo", NCCL_SOCKET_IFNAME="lo")
    per_rank = {r: {"NCCL_HOSTID": f"lightcc-smoke-{r}"} for r in range(size)}
    try:
        results = run_ranks(WORKER, size, timeout=180, env=env, per_rank_env=per_rank, expect_ok=False)
    except AssertionError as err:
        print(f"size {size} {env}: HANG/TIMEOUT {err}"[:3000])
        bad += 1
        continue
    ok = all(res.returncode == 0 for res in results)
    bad += not ok
    print(f"=== smoke size={size} env={env}: {'PASS' if ok else 'FAIL'}")
    if not ok:
        for res in results:
            print(f"--- rank {res.rank} rc={res.returncode}\n{res.stdout[-2500:]}\n{res.stderr[-2500:]}")
sys.exit(1 if bad else 0)
