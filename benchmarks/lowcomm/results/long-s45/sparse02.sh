#!/bin/bash
# Session 45: sparseloco:0.2 with Nesterov lr 1.0, momentum 0.5 (the best SparseLoCo setting over three seeds on the
# AVX2 machine) at 2 workers on loopback, seeds 1 and 2, on this AVX-512 machine; DiLoCo's loss at step 2000 on these
# seeds is the race's (race-100m.jsonl: the link changes the time, not the arithmetic).
cd /work/main
for seed in 1 2; do
  lightccrun -np 2 python -m benchmarks.lowcomm.train --method diloco --compression sparseloco:0.2 --outer-lr 1.0 \
    --outer-momentum 0.5 --steps 2000 --sync-every 50 --eval-every 100 --warmup 100 --decay cosine --seed $seed \
    --out /work/results/s45/sparse02.jsonl
done
echo "== $(date +%T) done"
