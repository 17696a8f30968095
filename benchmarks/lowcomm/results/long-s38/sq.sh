#!/bin/bash
# Session 38: after queue A, stop queue B; SparseLoCo's outer step on the 2000-step task (2 workers, seed 0, loopback).
cd /work/main
while ! grep -q "np=4" /work/results/s38/qa.log; do sleep 10; done
pkill -f qa.sh; sleep 1; pkill -f "benchmarks.lowcomm.train"; pkill -f lightccrun; sleep 5
COMMON="--sync-every 50 --steps 2000 --eval-every 100 --warmup 100 --decay cosine --seed 0"
run() { echo "== $(date +%T) $*"
  timeout 1800 lightccrun -np 2 python -m benchmarks.lowcomm.train --method diloco "$@" $COMMON \
    --out /work/results/s38/sparse-np2.jsonl 2>&1 | grep -v RESULT | tail -2
}
run --compression sparseloco --outer-lr 1 --outer-momentum 0
run --compression sparseloco --outer-lr 0.7 --outer-momentum 0.5
run --compression sparseloco:0.2 --outer-lr 2 --outer-momentum 0
run --compression sparseloco --outer-lr 1.5 --outer-momentum 0
echo "== $(date +%T) sq done"
