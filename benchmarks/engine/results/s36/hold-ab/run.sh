#!/bin/bash
# Alternating launches: LIGHTCC_OVERLAP=on (DDP buckets start mid-backward) and the default (held on one core a rank).
cd /work/main
for i in 1 2 3; do
  for mode in on default; do
    if [ $mode = on ]; then export LIGHTCC_OVERLAP=on; else unset LIGHTCC_OVERLAP; fi
    python -m benchmarks.ddp_vs_bound --rounds 1 --out /work/results/s36/hold-ab/$mode-$i > /work/results/s36/hold-ab/$mode-$i.log 2>&1
  done
done
echo done
