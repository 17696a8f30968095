#!/bin/bash
# Session 39: after sq3.sh, the seed-2 pair of SparseLoCo's default outer step and Nesterov 1.0/0.5.
cd /work/main
while ! grep -q "sq3 done" /work/results/s39/sq3.log; do sleep 5; done
COMMON="--sync-every 50 --steps 2000 --eval-every 100 --warmup 100 --decay cosine"
run() { echo "== $(date +%T) $*"
  timeout 2400 lightccrun -np 2 python -m benchmarks.lowcomm.train --method diloco "$@" $COMMON \
    --out /work/results/s39/sparse-np2.jsonl 2>&1 | grep -v RESULT | tail -2
}
run --compression sparseloco --outer-lr 1.0 --outer-momentum 0.5 --seed 2
run --compression sparseloco --outer-lr 2 --outer-momentum 0 --seed 2
echo "== $(date +%T) sq4 done"
