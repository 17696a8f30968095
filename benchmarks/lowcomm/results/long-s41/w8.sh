#!/bin/bash
# Session 41: 8 workers over 2000 steps, seed 0 (loopback, quality only): DiLoCo at outer lr 1.4
# (0.5 sqrt(M)), momentum 0.5 — against session 40's DDP 1.660 and lr 1.0 1.829 on the same CPU model.
cd /work/main
COMMON="--sync-every 50 --steps 2000 --eval-every 100 --warmup 100 --decay cosine --seed 0"
echo "== $(date +%T) -np 8 diloco lr 1.4"
timeout 3600 lightccrun -np 8 python -m benchmarks.lowcomm.train --method diloco --outer-lr 1.4 --outer-momentum 0.5 \
  $COMMON --out /work/results/s41/np8.jsonl 2>&1 | grep -v RESULT | tail -2
echo "== $(date +%T) w8 done"
