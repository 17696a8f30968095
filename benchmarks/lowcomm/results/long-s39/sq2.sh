#!/bin/bash
# Session 39: replace sq.sh's last run (sparseloco:0.2, SGD lr 3) with larger Nesterov steps.
cd /work/main
while ! grep -q "outer-lr 3" /work/results/s39/sq.log; do sleep 5; done
pkill -f sq.sh; sleep 1; pkill -f "benchmarks.lowcomm.train"; pkill -f lightccrun; sleep 5
COMMON="--sync-every 50 --steps 2000 --eval-every 100 --warmup 100 --decay cosine --seed 0"
run() { echo "== $(date +%T) $*"
  timeout 2400 lightccrun -np 2 python -m benchmarks.lowcomm.train --method diloco "$@" $COMMON \
    --out /work/results/s39/sparse-np2.jsonl 2>&1 | grep -v RESULT | tail -2
}
run --compression sparseloco --outer-lr 2.0 --outer-momentum 0.5
run --compression sparseloco:0.2 --outer-lr 1.4 --outer-momentum 0.5
echo "== $(date +%T) sq2 done"
