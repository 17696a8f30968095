#!/bin/bash
# Session 33: sparseloco at its defaults with the engine's CPU kernels (f640bbb) at 4 hosts x 1,
# 100 Mbit/s, 600 steps, H = 50, seeds 0-2, in one invocation. DiLoCo's and the torch codec's
# figures to compare with are sessions 30 and 31's (same CPU kind; losses are deterministic).
cd /work/main
python -m benchmarks.lowcomm.race --hosts 4 --rates 100mbit --seeds 0 1 2 \
  --run sparseloco="--method diloco --steps 600 --compression sparseloco --outer-lr 2 --outer-momentum 0" \
  --out /work/results/s33/race-sparse4.jsonl -- --sync-every 50 --eval-every 25
