#!/bin/bash
# Session 39: after sq4.sh, DiLoCo at 4 workers with a larger outer lr (1.0, momentum 0.5), seed 2
# (the default's +5.6 % seed). Loopback, quality only.
cd /work/main
while ! grep -q "sq4 done" /work/results/s39/sq4.log; do sleep 5; done
COMMON="--sync-every 50 --steps 2000 --eval-every 100 --warmup 100 --decay cosine"
run() { echo "== $(date +%T) $*"
  timeout 2700 lightccrun -np 4 python -m benchmarks.lowcomm.train --method diloco "$@" $COMMON \
    --out /work/results/s39/outer-np4.jsonl 2>&1 | grep -v RESULT | tail -2
}
run --outer-lr 1.0 --outer-momentum 0.5 --seed 2
echo "== $(date +%T) w4 done"
