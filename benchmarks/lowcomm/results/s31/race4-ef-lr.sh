#!/bin/bash
# Session 31: sparseloco's outer lr at 4 workers (defaults otherwise, Elias-Fano indices), seed 1, where
# the defaults trailed DiLoCo by 2.2 % in session 30: lr 1.5 and 2.5.
set -u
cd /work/main
OUT=/work/results/s31/lowcomm
python -m benchmarks.lowcomm.race --hosts 4 --rates 100mbit --seeds 1 \
  --run sparseloco-0.08-lr1.5="--method diloco --steps 600 --compression sparseloco:0.08 --outer-lr 1.5 --outer-momentum 0" \
  --run sparseloco-0.08-lr2.5="--method diloco --steps 600 --compression sparseloco:0.08 --outer-lr 2.5 --outer-momentum 0" \
  --out $OUT/race4-ef-lr.jsonl -- --sync-every 50 --eval-every 25
