#!/bin/bash
# Session 47, after np4.sh (one run at a time): 4 workers, seed 0, sparseloco:0.2:scatter with SparseLoCo's SGD lr 2:
# about the bytes of the allgather form at density 0.1 (25x against 21.6x fewer than float32 DiLoCo at 4 workers).
while pgrep -f "s47/np4.sh" > /dev/null; do sleep 10; done
common="--steps 2000 --sync-every 50 --eval-every 100 --warmup 100 --decay cosine"
cd /work/wt47b
lightccrun -np 4 python -m benchmarks.lowcomm.train --method diloco --compression sparseloco:0.2:scatter --outer-lr 2 \
  --outer-momentum 0 $common --seed 0 --out /work/results/s47/np4.jsonl
echo "== $(date +%T) done"
