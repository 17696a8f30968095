#!/bin/bash
# Session 43: `sparseloco` (density 0.1) at 4 workers over 2000 steps with its SGD lr scaled the way
# DiLoCo's default lr grows from 2 to 4 workers (0.7 -> 1.0): lr 2 x 1.0/0.7 = 2.8 (loopback, quality only).
cd /work/main
while pgrep -f "s43/race100.sh" > /dev/null; do sleep 10; done
for S in ${SEEDS:-0}; do
COMMON="--sync-every 50 --steps 2000 --eval-every 100 --warmup 100 --decay cosine --seed $S"
echo "== $(date +%T) -np 4 sparseloco lr 2.8 seed $S"
timeout 1800 lightccrun -np 4 python -m benchmarks.lowcomm.train --method diloco --compression sparseloco \
  --outer-lr 2.8 --outer-momentum 0 $COMMON --out /work/results/s43/sparse-np4-lr28.jsonl 2>&1 | grep -v RESULT | tail -2
done
echo "== $(date +%T) s4 done"
