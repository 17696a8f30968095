#!/bin/bash
# Session 27: the idle engine's slower network polling (44ecf19), A/B in alternating rounds:
# DDP over lightcc and over gloo on 2 emulated hosts at 1 Gbit/s, seed 0, before (HEAD less the idle back-off line in host_group.cc) and after (HEAD).
R=/work/results/s27/ab; mkdir -p $R
RUNS=(--run ddp-gloo="--method ddp --backend gloo" --run ddp-lightcc="--method ddp")
for round in 1 2; do
  for side in before after; do
    tree=/work/main; [ $side = before ] && tree=/work/wt-before
    (cd $tree && python -m benchmarks.lowcomm.race --hosts 2 --rates 1gbit --seeds 0 "${RUNS[@]}" \
       --out $R/$side.jsonl -- --sync-every 50 --eval-every 25 >> $R/$side.log 2>&1)
    echo "round $round $side done $(date +%T)" >> $R/progress
  done
done
echo done > $R/done
