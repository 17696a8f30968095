#!/bin/bash
# Session 29: SparseLoCo's codec (per-chunk top-k, 2-bit values, allgathered) against DiLoCo at its defaults, 2 x 1 at 100 Mbit/s.
set -u
cd /work/main
OUT=/work/results/s29/lowcomm
lscpu > $OUT/lscpu.txt
python -m benchmarks.lowcomm.race --hosts 2 --rates 100mbit --seeds 0 \
  --run diloco="--method diloco --steps 600" \
  --run sparseloco="--method diloco --steps 600 --compression sparseloco --outer-lr 1 --outer-momentum 0" \
  --out $OUT/race-sparse.jsonl -- --sync-every 50 --eval-every 25
