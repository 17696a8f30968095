#!/bin/bash
# Session 47, AMD EPYC family 25 model 17 (AVX-512), after seeds5.sh (one run at a time): 4 workers on loopback,
# 2000 steps, seed 0: float32 DiLoCo at its defaults (outer lr 1.0 at 4 workers), and SparseLoCo's codec at its
# defaults (density 0.1, its SGD lr 2 without momentum) in the new reduce-scatter form (sparseloco:scatter, HEAD
# 970f02b in /work/wt47b) and in the allgather form. Then seeds 3 and 4 of int8 and of sparseloco at 2 workers.
while pgrep -f "s47/seeds5.sh" > /dev/null; do sleep 10; done
common="--steps 2000 --sync-every 50 --eval-every 100 --warmup 100 --decay cosine"
cd /work/wt47b
lightccrun -np 4 python -m benchmarks.lowcomm.train --method diloco $common --seed 0 --out /work/results/s47/np4.jsonl
for spec in sparseloco:scatter sparseloco; do
  lightccrun -np 4 python -m benchmarks.lowcomm.train --method diloco --compression $spec --outer-lr 2 \
    --outer-momentum 0 $common --seed 0 --out /work/results/s47/np4.jsonl
done
echo "== $(date +%T) np4 done"
for seed in 3 4; do
  lightccrun -np 2 python -m benchmarks.lowcomm.train --method diloco --compression int8 $common --seed $seed \
    --out /work/results/s47/int8.jsonl
  lightccrun -np 2 python -m benchmarks.lowcomm.train --method diloco --compression sparseloco --outer-lr 2 \
    --outer-momentum 0 $common --seed $seed --out /work/results/s47/sparse.jsonl
done
echo "== $(date +%T) done"
