#!/bin/bash
# Session 30: SparseLoCo's codec at 4 hosts: density 0.04 (half of 2 hosts' default, so the union of the
# four workers' selections covers as much of a chunk as two workers' at 0.08) against DiLoCo at its
# defaults, 3 seeds, 4 x 1 at 100 Mbit/s, one invocation.
set -u
cd /work/main
OUT=/work/results/s30/lowcomm
python -m benchmarks.lowcomm.race --hosts 4 --rates 100mbit --seeds 0 1 2 \
  --run diloco="--method diloco --steps 600" \
  --run sparseloco-0.04="--method diloco --steps 600 --compression sparseloco:0.04 --outer-lr 2 --outer-momentum 0" \
  --out $OUT/race4-sparse.jsonl -- --sync-every 50 --eval-every 25
