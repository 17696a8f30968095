#!/bin/bash
# Session 39: stop sq2.sh (its sparseloco Nesterov 2.0 run: 1.4 was already worse than 1.0) and
# pair SparseLoCo's default outer step with Nesterov 1.0/0.5 over more seeds.
cd /work/main
pkill -f sq2.sh; sleep 1; pkill -f "benchmarks.lowcomm.train"; pkill -f lightccrun; sleep 5
COMMON="--sync-every 50 --steps 2000 --eval-every 100 --warmup 100 --decay cosine"
run() { echo "== $(date +%T) $*"
  timeout 2400 lightccrun -np 2 python -m benchmarks.lowcomm.train --method diloco "$@" $COMMON \
    --out /work/results/s39/sparse-np2.jsonl 2>&1 | grep -v RESULT | tail -2
}
run --compression sparseloco:0.2 --outer-lr 1.4 --outer-momentum 0.5 --seed 0
run --compression sparseloco --outer-lr 1.0 --outer-momentum 0.5 --seed 1
run --compression sparseloco --outer-lr 2 --outer-momentum 0 --seed 1
echo "== $(date +%T) sq3 done"
