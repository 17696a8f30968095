#!/bin/bash
# Session 31: DiLoCo at its defaults and sparseloco at density 0.1 (Elias-Fano indices, SGD lr 2) at
# 2 hosts x 1, 100 Mbit/s, 600 steps, H = 50, seeds 0-2, in one invocation.
set -u
cd /work/main
OUT=/work/results/s31/lowcomm
python -m benchmarks.lowcomm.race --hosts 2 --rates 100mbit --seeds 0 1 2 \
  --run diloco="--method diloco --steps 600" \
  --run sparseloco-0.1-lr2="--method diloco --steps 600 --compression sparseloco:0.1 --outer-lr 2 --outer-momentum 0" \
  --out $OUT/race2-ef-0.1.jsonl -- --sync-every 50 --eval-every 25
