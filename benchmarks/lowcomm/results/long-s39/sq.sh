#!/bin/bash
# Session 39: SparseLoCo's outer step at today's defaults, seed 0 (2 workers, loopback, quality only).
cd /work/main
COMMON="--sync-every 50 --steps 2000 --eval-every 100 --warmup 100 --decay cosine --seed 0"
run() { echo "== $(date +%T) $*"
  timeout 2400 lightccrun -np 2 python -m benchmarks.lowcomm.train --method diloco "$@" $COMMON \
    --out /work/results/s39/sparse-np2.jsonl 2>&1 | grep -v RESULT | tail -2
}
run --compression sparseloco:0.2 --outer-lr 1.0 --outer-momentum 0.5
run --compression sparseloco --outer-lr 1.4 --outer-momentum 0.5
run --compression sparseloco:0.2 --outer-lr 3 --outer-momentum 0
echo "== $(date +%T) sq done"
