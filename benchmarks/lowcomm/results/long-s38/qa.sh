#!/bin/bash
# Session 38, queue A then B: 2000-step quality on loopback (no timing).
# A: 2 workers seed 0: DDP (cross-machine check against s37's 1.8241), DiLoCo, int8, int4, sparseloco, streaming.
# B: 4 workers seed 2: DDP, DiLoCo default, DiLoCo outer lr 1.0.
cd /work/main
COMMON="--sync-every 50 --steps 2000 --eval-every 100 --warmup 100 --decay cosine"
run() { local np=$1 out=$2; shift 2
  echo "== $(date +%T) np=$np $*"
  timeout 1800 lightccrun -np $np python -m benchmarks.lowcomm.train "$@" $COMMON --out $out 2>&1 | grep -v RESULT | tail -2
}
A=/work/results/s38/long-np2.jsonl
run 2 $A --method ddp --seed 0
run 2 $A --method diloco --seed 0
run 2 $A --method diloco --compression int8 --seed 0
run 2 $A --method diloco --compression int4 --seed 0
run 2 $A --method diloco --compression sparseloco --outer-lr 2 --outer-momentum 0 --seed 0
run 2 $A --method diloco --fragments 5 --seed 0
B=/work/results/s38/long-np4.jsonl
run 4 $B --method ddp --seed 2
run 4 $B --method diloco --seed 2
run 4 $B --method diloco --outer-lr 1.0 --seed 2
echo "== $(date +%T) qa done"
