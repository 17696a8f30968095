#!/bin/bash
# Session 30: sparseloco at its defaults in the reduce-scatter form (commit 0abe9be, reverted in 8388220),
# 4 hosts x 1, 100 Mbit/s; stopped after seed 0 (3.480 bits/byte at step 600).
set -u
cd /work/main
OUT=/work/results/s30/lowcomm
python -m benchmarks.lowcomm.race --hosts 4 --rates 100mbit --seeds 0 1 2 \
  --run sparseloco-rs="--method diloco --steps 600 --compression sparseloco --outer-lr 2 --outer-momentum 0" \
  --out $OUT/race4-sparse-defaults.jsonl -- --sync-every 50 --eval-every 25
