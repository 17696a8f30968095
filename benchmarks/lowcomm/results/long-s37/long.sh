#!/bin/bash
# Long-horizon quality probe: DDP vs DiLoCo at 2 workers, loopback (quality only, no timing).
cd /work/main
OUT=/work/results/s37/long-np${NP:-2}.jsonl
S=${STEPS:-2000}
for seed in ${SEEDS:-0}; do
for m in "--method ddp" "--method diloco" "--method diloco --outer-momentum 0.5"; do
  timeout 1800 lightccrun -np ${NP:-2} python -m benchmarks.lowcomm.train $m --sync-every 50 --seed $seed --steps $S \
     --eval-every 100 --warmup 100 --decay cosine --out $OUT 2>&1 | grep -v RESULT | tail -3
done; done
echo done
