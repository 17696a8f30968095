#!/bin/bash
# Session 39: `sparseloco` at its defaults at 4 workers over 2000 steps, seed 0 (loopback, quality only).
cd /work/main
COMMON="--sync-every 50 --steps 2000 --eval-every 100 --warmup 100 --decay cosine --seed 0"
echo "== $(date +%T) -np 4 sparseloco"
timeout 1800 lightccrun -np 4 python -m benchmarks.lowcomm.train --method diloco --compression sparseloco \
  --outer-lr 2 --outer-momentum 0 $COMMON --out /work/results/s39/sparse-np4.jsonl 2>&1 | grep -v RESULT | tail -2
echo "== $(date +%T) w6 done"
