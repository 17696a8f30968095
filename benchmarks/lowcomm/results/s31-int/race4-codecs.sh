#!/bin/bash
# Session 31: int8 and int4 outer steps (reduce-scatter form) at 4 hosts x 1, 100 Mbit/s, 600 steps,
# H = 50, on seeds 1 and 2 (seed 0: session 28's race4x1-rs.jsonl).
set -u
cd /work/main
OUT=/work/results/s31b/lowcomm
python -m benchmarks.lowcomm.race --hosts 4 --rates 100mbit --seeds 1 2 \
  --run diloco-int8="--method diloco --steps 600 --compression int8" \
  --run diloco-int4="--method diloco --steps 600 --compression int4" \
  --out $OUT/race4-int.jsonl -- --sync-every 50 --eval-every 25
