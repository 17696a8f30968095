#!/bin/bash
# Session 47, AMD EPYC family 25 model 17 (AVX-512), after seeds5.sh (one run at a time): seeds 3 and 4 of int8
# (DiLoCo's defaults) and of sparseloco at its defaults (its own SGD lr 2, no momentum), 2 workers on loopback,
# 2000 steps.
while pgrep -f "s47/seeds5.sh" > /dev/null; do sleep 10; done
cd /work/wt47
common="--steps 2000 --sync-every 50 --eval-every 100 --warmup 100 --decay cosine"
for seed in 3 4; do
  lightccrun -np 2 python -m benchmarks.lowcomm.train --method diloco --compression int8 $common --seed $seed \
    --out /work/results/s47/int8.jsonl
  lightccrun -np 2 python -m benchmarks.lowcomm.train --method diloco --compression sparseloco --outer-lr 2 \
    --outer-momentum 0 $common --seed $seed --out /work/results/s47/sparse.jsonl
done
echo "== $(date +%T) done"
