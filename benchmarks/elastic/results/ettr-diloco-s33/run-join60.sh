#!/bin/bash
# Session 33: torchft's DiLoCo again under the same schedule with the lighthouse's default join timeout
# (60 s instead of the DDP race's 1 s), after run.sh's torchft row lost quality to quorum churn.
cd /work/main
python -m benchmarks.elastic.ettr --systems torchft-diloco-join60 --steps 300 --sync-every 10 \
  --kill-every 100 --step-time 0.25 --active 4 --spares 1 --repair-after 20 --timeout 600 \
  --out /work/results/s33/ettr-diloco/race-join60
