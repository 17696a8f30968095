#!/bin/bash
# Session 30: sparseloco at its defaults (density 0.08 of 4096, decay 0.95, outer SGD lr 2; allgathered) at
# 4 hosts x 1, 100 Mbit/s, seeds 1 and 2 (seed 0: race4-sparse-lr.jsonl's sparseloco-0.08-lr2, the same
# arguments and code). race4-sparse-rs.jsonl holds the one run of the reduce-scatter form (commit 0abe9be,
# reverted), stopped after seed 0.
set -u
cd /work/main
OUT=/work/results/s30/lowcomm
python -m benchmarks.lowcomm.race --hosts 4 --rates 100mbit --seeds 1 2 \
  --run sparseloco-0.08-lr2="--method diloco --steps 600 --compression sparseloco:0.08 --outer-lr 2 --outer-momentum 0" \
  --out $OUT/race4-sparse-defaults.jsonl -- --sync-every 50 --eval-every 25
