#!/bin/bash
# Session 42: `sparseloco:0.2` (25x fewer bytes at 2 workers) on seeds 1 and 2 over 2000 steps, with
# SGD lr 2 (SparseLoCo's outer step) and Nesterov lr 1.0 / momentum 0.5 (seed 0's better one).
cd /work/main
while pgrep -f "s42/w4.sh" > /dev/null; do sleep 10; done
for S in 1 2; do
  COMMON="--sync-every 50 --steps 2000 --eval-every 100 --warmup 100 --decay cosine --seed $S"
  for OUTER in "--outer-lr 1.0 --outer-momentum 0.5" "--outer-lr 2 --outer-momentum 0"; do
    echo "== $(date +%T) -np 2 sparseloco:0.2 seed $S $OUTER"
    timeout 1200 lightccrun -np 2 python -m benchmarks.lowcomm.train --method diloco --compression sparseloco:0.2 \
      $OUTER $COMMON --out /work/results/s42/dense02-np2.jsonl 2>&1 | grep -v RESULT | tail -2
  done
done
echo "== $(date +%T) d2 done"
