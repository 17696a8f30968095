#!/bin/bash
# Session 33: the DiLoCo ETTR race's three systems in one invocation under a second failure schedule
# (--seed 2 moves each loss by up to a quarter of --kill-every); otherwise as run.sh.
cd /work/main
python -m benchmarks.elastic.ettr --systems lightcc-diloco,torchft-diloco,torchft-diloco-join60 --steps 300 \
  --sync-every 10 --kill-every 100 --step-time 0.25 --active 4 --spares 1 --repair-after 20 --timeout 600 \
  --seed 2 --out /work/results/s33/ettr-diloco/race-seed2
