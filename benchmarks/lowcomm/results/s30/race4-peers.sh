#!/bin/bash
# Session 30: the peers at 4 hosts x 1, 100 Mbit/s, seeds 0-2 in one invocation: DDP over gloo (300 steps,
# the equal-token budget) and torchft 0.2.0's DiLoCo (600 steps, H = 50), beside race4-sparse.jsonl's
# lightcc DiLoCo and sparseloco on the same emulated hosts.
set -u
cd /work/main
OUT=/work/results/s30/lowcomm
python -m benchmarks.lowcomm.race --hosts 4 --rates 100mbit --seeds 0 1 2 \
  --run ddp-gloo="--method ddp --backend gloo" \
  --run torchft="--method torchft-diloco --steps 600" \
  --out $OUT/race4-peers.jsonl -- --sync-every 50 --eval-every 25
