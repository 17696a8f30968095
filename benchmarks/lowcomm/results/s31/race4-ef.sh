#!/bin/bash
# Session 31: sparseloco with Elias-Fano indices (the same selection and values as session 30's 16-bit
# indices, 2.36x fewer bytes a row) at 4 hosts x 1, 100 Mbit/s, 600 steps, H = 50: the defaults on seed 0
# (the loss must equal session 30's), then density 0.1 on seeds 0-2.
set -u
cd /work/main
OUT=/work/results/s31/lowcomm
python -m benchmarks.lowcomm.race --hosts 4 --rates 100mbit --seeds 0 \
  --run sparseloco-0.08-lr2="--method diloco --steps 600 --compression sparseloco:0.08 --outer-lr 2 --outer-momentum 0" \
  --out $OUT/race4-ef-defaults.jsonl -- --sync-every 50 --eval-every 25
python -m benchmarks.lowcomm.race --hosts 4 --rates 100mbit --seeds 0 1 2 \
  --run sparseloco-0.1-lr2="--method diloco --steps 600 --compression sparseloco:0.1 --outer-lr 2 --outer-momentum 0" \
  --out $OUT/race4-ef-0.1.jsonl -- --sync-every 50 --eval-every 25
