#!/bin/bash
# Session 42: `sparseloco` at its defaults at 4 workers over 2000 steps, seeds 1 and 2 (loopback, quality only).
cd /work/main
for S in 1 2; do
COMMON="--sync-every 50 --steps 2000 --eval-every 100 --warmup 100 --decay cosine --seed $S"
echo "== $(date +%T) -np 4 sparseloco seed $S"
timeout 1800 lightccrun -np 4 python -m benchmarks.lowcomm.train --method diloco --compression sparseloco \
  --outer-lr 2 --outer-momentum 0 $COMMON --out /work/results/s42/sparse-np4.jsonl 2>&1 | grep -v RESULT | tail -2
done
echo "== $(date +%T) w4 done"
