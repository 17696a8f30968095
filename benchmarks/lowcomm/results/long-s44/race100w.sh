#!/bin/bash
# Session 44: streaming's wait at 100 Mbit/s on this 2-core machine, seeds 1 and 2 (session 43 ran seed 0):
# delay 1 (the default) and 2 against plain DiLoCo in the same invocation (2 hosts x 1 rank, 2000 steps each).
cd /work/main
python -m benchmarks.lowcomm.race --hosts 2 --rates 100mbit --seeds 1 2 --timeout 1500 \
  --run diloco="--method diloco" \
  --run streaming="--method diloco --fragments 5" \
  --run streaming-d2="--method diloco --fragments 5 --delay 2" \
  --out /work/results/s44/race-100m-wait.jsonl -- --steps 2000 --sync-every 50 --eval-every 100 --warmup 100 --decay cosine
echo "== $(date +%T) race done"
