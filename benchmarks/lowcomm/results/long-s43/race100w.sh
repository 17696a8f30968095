#!/bin/bash
# Session 43: streaming's wait at 100 Mbit/s on this 2-core machine, delay 1 (the default) and 2,
# against plain DiLoCo in the same invocation (2 hosts x 1 rank, seed 0, 2000 steps each).
cd /work/main
python -m benchmarks.lowcomm.race --hosts 2 --rates 100mbit --seeds 0 --timeout 1500 \
  --run diloco="--method diloco" \
  --run streaming="--method diloco --fragments 5" \
  --run streaming-d2="--method diloco --fragments 5 --delay 2" \
  --out /work/results/s43/race-100m-wait.jsonl -- --steps 2000 --sync-every 50 --eval-every 100 --warmup 100 --decay cosine
echo "== $(date +%T) race done"
