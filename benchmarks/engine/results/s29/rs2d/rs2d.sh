#!/bin/bash
# Session 29: 2D reducescatter (lane shares gathered in the shm step, pipelined cross ring) against the flat ring and gloo, 2 x 2 at 1 Gbit/s.
set -u
cd /work/main
OUT=/work/results/s29/rs2d
mkdir -p $OUT
lscpu > $OUT/lscpu.txt
git rev-parse HEAD > $OUT/commit.txt; git diff --stat >> $OUT/commit.txt
for round in 1 2; do
  LIGHT_2D_ALLREDUCE=0 lightcc-bench reducescatter --hosts 2x2 --rate 1gbit --sizes 256K,1M,4M,16M,64M --compare gloo --no-progress --json $OUT/flat-$round.json > $OUT/flat-$round.txt 2>&1
  LIGHTCC_LOG_LEVEL=info lightcc-bench reducescatter --hosts 2x2 --rate 1gbit --sizes 256K,1M,4M,16M,64M --no-progress --json $OUT/auto-$round.json > $OUT/auto-$round.txt 2>&1
done
