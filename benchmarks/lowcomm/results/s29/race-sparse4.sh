#!/bin/bash
# Session 29: SparseLoCo's codec, outer SGD lr 2.5 and 3 at density 0.08, lr 2 at 0.05; 2 x 1 at 100 Mbit/s, seed 0.
set -u
cd /work/main
OUT=/work/results/s29/lowcomm
python -m benchmarks.lowcomm.race --hosts 2 --rates 100mbit --seeds 0 \
  --run sl08-lr2.5="--method diloco --steps 600 --compression sparseloco:0.08 --outer-lr 2.5 --outer-momentum 0" \
  --run sl08-lr3="--method diloco --steps 600 --compression sparseloco:0.08 --outer-lr 3 --outer-momentum 0" \
  --run sl05-lr2="--method diloco --steps 600 --compression sparseloco:0.05 --outer-lr 2 --outer-momentum 0" \
  --out $OUT/race-sparse4.jsonl -- --sync-every 50 --eval-every 25
