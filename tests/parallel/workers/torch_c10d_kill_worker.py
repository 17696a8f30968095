"""DDP over the "lightcc" backend with one rank killed mid-training: the others must raise, naming it.

argv: store port, the rank that dies, the step it dies at. Survivors print
"RAISED <seconds since the death step began> <message>" and exit 0; a survivor that finishes
training prints "FINISHED" (a failure for the test).
"""
from __future__ import annotations

import os
import signal
import sys
import time
from datetime import timedelta

import common  # noqa: F401  (puts the repo on sys.path)
import torch
import torch.distributed as dist

import lightcc.torch  # noqa: F401  (registers the backend)

R, N = int(os.environ["LIGHTCC_RANK"]), int(os.environ["LIGHTCC_SIZE"])
PORT, VICTIM, DEATH_STEP = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])


def main() -> None:
    dist.init_process_group("lightcc", init_method=f"tcp://127.0.0.1:{PORT}", rank=R, world_size=N,
                            timeout=timedelta(seconds=60))
    torch.manual_seed(0)
    net = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(),
                                                                        torch.nn.Linear(64, 8)))
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    began = time.monotonic()
    try:
        for step in range(200):
            if step == DEATH_STEP:
                began = time.monotonic()
                if R == VICTIM:
                    os.kill(os.getpid(), signal.SIGKILL)
            opt.zero_grad()
            net(torch.randn(16, 64)).sum().backward()
            opt.step()
            time.sleep(0.01)
    except Exception as err:  # noqa: BLE001  (what torch raises from the failed work is the point)
        print(f"RAISED {time.monotonic() - began:.2f} {type(err).__name__}: {err}".replace("\n", " "), flush=True)
        os._exit(0)  # the group is broken: leave without a teardown that would wait on the dead rank
    print("FINISHED", flush=True)


if __name__ == "__main__":
    main()
