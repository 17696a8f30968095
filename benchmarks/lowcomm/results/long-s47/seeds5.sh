#!/bin/bash
# Session 47, AMD EPYC family 25 model 17 (AVX-512): seeds 3 and 4 (after session 45-46's 0, 1, 2 on this CPU model)
# at 2 workers on loopback over 2000 steps: float32 DiLoCo, sparseloco:0.2 with Nesterov lr 1.0 momentum 0.5 (the
# best SparseLoCo setting), and DDP; one run at a time.
cd /work/wt47
common="--steps 2000 --sync-every 50 --eval-every 100 --warmup 100 --decay cosine"
for seed in 3 4; do
  lightccrun -np 2 python -m benchmarks.lowcomm.train --method diloco $common --seed $seed \
    --out /work/results/s47/diloco.jsonl
  lightccrun -np 2 python -m benchmarks.lowcomm.train --method diloco --compression sparseloco:0.2 --outer-lr 1.0 \
    --outer-momentum 0.5 $common --seed $seed --out /work/results/s47/sparse02.jsonl
  lightccrun -np 2 python -m benchmarks.lowcomm.train --method ddp $common --seed $seed \
    --out /work/results/s47/ddp.jsonl
done
echo "== $(date +%T) done"
