#!/bin/bash
# Before/after of the pipelined ring reducescatter: the same benches with 3a66d2d's core and with the patched one.
set -u
cd /work/main
SO=lightcc/_core.cpython-311-x86_64-linux-gnu.so
NEW=/work/build-main/out/_core.cpython-311-x86_64-linux-gnu.so
OLD=/work/notes/_core-3a66d2d.so
lscpu > /work/results/s29/lscpu.txt
for round in a b; do
  for v in old new; do
    if [ $v = old ]; then cp $OLD $SO.tmp; else cp $NEW $SO.tmp; fi; mv $SO.tmp $SO
    for d in 0 1; do
      LIGHT_2D_ALLREDUCE=$d timeout 900 lightcc-bench reducescatter --hosts 2x2 --rate 1gbit --sizes 1M,16M,64M --no-progress --json /work/results/s29/rs2x2-$v-2d$d-$round.json 2>&1 | grep -E "^ +[0-9]"
    done
    timeout 900 lightcc-bench reducescatter --hosts 2x1 --rate 1gbit --sizes 1M,16M,64M --no-progress --json /work/results/s29/rs2x1-$v-$round.json 2>&1 | grep -E "^ +[0-9]"
  done
done
cp $NEW $SO.tmp; mv $SO.tmp $SO
