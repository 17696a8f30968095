#!/bin/bash
# Session 46, AMD EPYC family 25 model 17 (AVX-512): the new fp8 (E4M3) and e3m0 outer-step codecs at 2 workers on
# loopback over 2000 steps, seeds 0, 1, 2, DiLoCo's defaults otherwise (after codecs3.sh: one run at a time).
while pgrep -f "s46/codecs3.sh" > /dev/null; do sleep 10; done
cd /work/wt46b
common="--steps 2000 --sync-every 50 --eval-every 100 --warmup 100 --decay cosine"
for spec in fp8 e3m0; do
  for seed in 0 1 2; do
    lightccrun -np 2 python -m benchmarks.lowcomm.train --method diloco --compression $spec $common --seed $seed \
      --out /work/results/s46/floats.jsonl
  done
done
echo "== $(date +%T) done"
