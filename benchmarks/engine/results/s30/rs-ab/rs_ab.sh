#!/bin/bash
# A/B: the reducescatter at 2x2, 1 Gbit/s, with the core before (ac98953) and after (in-place ring entry).
cd /work/main
SO=lightcc/_core.cpython-311-x86_64-linux-gnu.so
cp $SO /work/notes/_core-inplace.so
for round in 1 2; do
  for v in before after; do
    if [ $v = before ]; then cp /work/notes/_core-ac98953.so $SO.new; else cp /work/notes/_core-inplace.so $SO.new; fi
    mv $SO.new $SO
    echo "=== round $round $v $(date -u +%T)"
    timeout 900 lightcc-bench reducescatter --hosts 2x2 --rate 1gbit --sizes 16M,64M --no-progress --json /work/results/s30/rs-ab/$v-$round.json 2>&1 | tail -6
  done
done
cp /work/notes/_core-inplace.so $SO.new; mv $SO.new $SO
