#!/bin/bash
# Session 29, after the ring reducescatter stages its input chunk by chunk into a kept work area: 2 x 1 flat (with gloo) and 2 x 2 flat (with gloo) against no flag (2D), 1 Gbit/s, two rounds.
set -u
cd /work/main
OUT=/work/results/s29/rs-kept
mkdir -p $OUT
lscpu > $OUT/lscpu.txt
git rev-parse HEAD > $OUT/commit.txt; git diff --stat >> $OUT/commit.txt
for round in 1 2; do
  lightcc-bench reducescatter --hosts 2x1 --rate 1gbit --sizes 1M,16M,64M --compare gloo --no-progress --json $OUT/flat2x1-$round.json > $OUT/flat2x1-$round.txt 2>&1
  LIGHT_2D_ALLREDUCE=0 lightcc-bench reducescatter --hosts 2x2 --rate 1gbit --sizes 256K,1M,4M,16M,64M --compare gloo --no-progress --json $OUT/flat-$round.json > $OUT/flat-$round.txt 2>&1
  LIGHTCC_LOG_LEVEL=info lightcc-bench reducescatter --hosts 2x2 --rate 1gbit --sizes 256K,1M,4M,16M,64M --no-progress --json $OUT/auto-$round.json > $OUT/auto-$round.txt 2>&1
done
