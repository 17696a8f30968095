#!/bin/bash
# Session 40: 8 workers over 2000 steps, seed 0 (loopback, quality only): DDP, and DiLoCo at outer lr 1.0
# (momentum 0.5), the value the new default holds from 4 workers on.
cd /work/main
COMMON="--sync-every 50 --steps 2000 --eval-every 100 --warmup 100 --decay cosine --seed 0"
echo "== $(date +%T) -np 8 ddp"
timeout 3600 lightccrun -np 8 python -m benchmarks.lowcomm.train --method ddp $COMMON \
  --out /work/results/s40/np8.jsonl 2>&1 | grep -v RESULT | tail -2
echo "== $(date +%T) -np 8 diloco lr 1.0"
timeout 3600 lightccrun -np 8 python -m benchmarks.lowcomm.train --method diloco --outer-lr 1.0 --outer-momentum 0.5 \
  $COMMON --out /work/results/s40/np8.jsonl 2>&1 | grep -v RESULT | tail -2
echo "== $(date +%T) w8 done"
