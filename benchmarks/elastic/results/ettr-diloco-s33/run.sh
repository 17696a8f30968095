#!/bin/bash
# Session 33: the DiLoCo ETTR race. lightcc's elastic DiLoCo against torchft 0.2.0's DiLoCo on emulated
# hosts (4 training + 1 spare, one rank each), 300 inner steps, H = 10, +0.25 s a step, a whole host
# lost about every 100 steps (rank 0's host first), back after 20 s; failure-free runs first; both
# systems in one invocation. A first try (not kept) ran torchft's worker with init_sync: it healed every
# replica from one at the first quorum, so all trained on one replica's weights (fixed before this run).
cd /work/main
python -m benchmarks.elastic.ettr --systems lightcc-diloco,torchft-diloco --steps 300 --sync-every 10 \
  --kill-every 100 --step-time 0.25 --active 4 --spares 1 --repair-after 20 --timeout 600 \
  --out /work/results/s33/ettr-diloco/race
