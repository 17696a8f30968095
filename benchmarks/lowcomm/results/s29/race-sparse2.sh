#!/bin/bash
# Session 29: SparseLoCo's codec, density and residual decay, 2 x 1 at 100 Mbit/s, seed 0 (outer SGD lr 1, no momentum).
set -u
cd /work/main
OUT=/work/results/s29/lowcomm
python -m benchmarks.lowcomm.race --hosts 2 --rates 100mbit --seeds 0 \
  --run sl08-b95="--method diloco --steps 600 --compression sparseloco:0.08:4096:0.95 --outer-lr 1 --outer-momentum 0" \
  --run sl08-b1="--method diloco --steps 600 --compression sparseloco:0.08:4096:1 --outer-lr 1 --outer-momentum 0" \
  --run sl03-b1="--method diloco --steps 600 --compression sparseloco:0.03:4096:1 --outer-lr 1 --outer-momentum 0" \
  --out $OUT/race-sparse2.jsonl -- --sync-every 50 --eval-every 25
