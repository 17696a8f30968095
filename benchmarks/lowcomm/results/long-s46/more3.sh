#!/bin/bash
# Session 46, AMD EPYC family 25 model 17 (AVX-512), after floats3.sh (one run at a time), 2 workers on loopback,
# 2000 steps, DiLoCo's defaults otherwise: sparseloco at its defaults (its own outer step: SGD lr 2, no momentum)
# at H = 25 (twice the exchanges, still 21.6x fewer bytes than float32 DiLoCo at H = 50) and at H = 50 on seeds
# 0, 1, 2; DDP on seed 0 (seeds 1 and 2: session 45's race); int4 (e3m0's bytes) on seeds 0, 1, 2 last.
while pgrep -f "s46/floats3.sh" > /dev/null; do sleep 10; done
cd /work/wt46b
common="--steps 2000 --eval-every 100 --warmup 100 --decay cosine"
for h in 25 50; do
  for seed in 0 1 2; do
    lightccrun -np 2 python -m benchmarks.lowcomm.train --method diloco --compression sparseloco --outer-lr 2 \
      --outer-momentum 0 --sync-every $h $common --seed $seed --out /work/results/s46/sparse-h.jsonl
  done
done
lightccrun -np 2 python -m benchmarks.lowcomm.train --method ddp --sync-every 50 $common --seed 0 \
  --out /work/results/s46/ddp.jsonl
for seed in 0 1 2; do
  lightccrun -np 2 python -m benchmarks.lowcomm.train --method diloco --compression int4 --sync-every 50 $common \
    --seed $seed --out /work/results/s46/int4.jsonl
done
echo "== $(date +%T) done"
