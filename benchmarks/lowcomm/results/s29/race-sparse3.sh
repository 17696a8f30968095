#!/bin/bash
# Session 29: SparseLoCo's codec at density 0.08, outer step size: SGD lr 2 and 4, and DiLoCo's Nesterov (0.7, 0.9); 2 x 1 at 100 Mbit/s, seed 0.
set -u
cd /work/main
OUT=/work/results/s29/lowcomm
python -m benchmarks.lowcomm.race --hosts 2 --rates 100mbit --seeds 0 \
  --run sl08-lr2="--method diloco --steps 600 --compression sparseloco:0.08 --outer-lr 2 --outer-momentum 0" \
  --run sl08-lr4="--method diloco --steps 600 --compression sparseloco:0.08 --outer-lr 4 --outer-momentum 0" \
  --run sl08-nesterov="--method diloco --steps 600 --compression sparseloco:0.08" \
  --out $OUT/race-sparse3.jsonl -- --sync-every 50 --eval-every 25
