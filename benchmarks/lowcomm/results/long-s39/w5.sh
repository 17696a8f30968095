#!/bin/bash
# Session 39: DiLoCo's outer lr 1.0 (momentum 0.5) on the other 4-worker seeds, then at 2 workers on
# three seeds, against the default lr 0.7 (session 37's lines). Loopback, quality only.
cd /work/main
COMMON="--sync-every 50 --steps 2000 --eval-every 100 --warmup 100 --decay cosine --outer-lr 1.0 --outer-momentum 0.5"
run() { np=$1; shift; echo "== $(date +%T) -np $np $*"
  timeout 2700 lightccrun -np $np python -m benchmarks.lowcomm.train --method diloco "$@" $COMMON \
    --out /work/results/s39/outer-np$np.jsonl 2>&1 | grep -v RESULT | tail -2
}
run 4 --seed 0
run 4 --seed 1
run 2 --seed 0
run 2 --seed 1
run 2 --seed 2
echo "== $(date +%T) w5 done"
