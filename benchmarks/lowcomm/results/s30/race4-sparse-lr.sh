#!/bin/bash
# Session 30: sparseloco at 4 hosts x 1, 100 Mbit/s, seed 0: density 0.08 and 0.04 with the outer SGD's lr 4
# (the sparse average dilutes a value one worker sent by the N - 1 that did not send it: lr 2 was best at N = 2),
# and density 0.08 at lr 2 (the 2-host default).
set -u
cd /work/main
OUT=/work/results/s30/lowcomm
python -m benchmarks.lowcomm.race --hosts 4 --rates 100mbit --seeds 0 \
  --run sparseloco-0.08-lr4="--method diloco --steps 600 --compression sparseloco:0.08 --outer-lr 4 --outer-momentum 0" \
  --run sparseloco-0.04-lr4="--method diloco --steps 600 --compression sparseloco:0.04 --outer-lr 4 --outer-momentum 0" \
  --run sparseloco-0.08-lr2="--method diloco --steps 600 --compression sparseloco:0.08 --outer-lr 2 --outer-momentum 0" \
  --out $OUT/race4-sparse-lr.jsonl -- --sync-every 50 --eval-every 25
