#!/bin/bash
# Session 29: SparseLoCo's codec at its defaults (density 0.08 of 4096, decay 0.95; outer SGD lr 2, no momentum) against DiLoCo at its defaults, 3 seeds, 2 x 1 at 100 Mbit/s.
set -u
cd /work/main
OUT=/work/results/s29/lowcomm
python -m benchmarks.lowcomm.race --hosts 2 --rates 100mbit --seeds 0 1 2 \
  --run diloco="--method diloco --steps 600" \
  --run sparseloco="--method diloco --steps 600 --compression sparseloco --outer-lr 2 --outer-momentum 0" \
  --out $OUT/race-sparse-seeds.jsonl -- --sync-every 50 --eval-every 25
