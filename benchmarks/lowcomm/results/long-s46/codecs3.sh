#!/bin/bash
# Session 46, AMD EPYC family 25 model 17 (AVX-512): three seeds on one machine for the outer-step codecs at
# 2 workers on loopback over 2000 steps (DiLoCo's own losses on seeds 0, 1, 2 are session 45's race runs there):
# sparseloco:0.2 with Nesterov lr 1.0, momentum 0.5 on seed 0 (seeds 1 and 2: session 45), int8 on seeds 0, 1, 2.
cd /work/wt46
common="--steps 2000 --sync-every 50 --eval-every 100 --warmup 100 --decay cosine"
lightccrun -np 2 python -m benchmarks.lowcomm.train --method diloco --compression sparseloco:0.2 --outer-lr 1.0 \
  --outer-momentum 0.5 $common --seed 0 --out /work/results/s46/sparse02.jsonl
for seed in 0 1 2; do
  lightccrun -np 2 python -m benchmarks.lowcomm.train --method diloco --compression int8 $common --seed $seed \
    --out /work/results/s46/int8.jsonl
done
echo "== $(date +%T) done"
