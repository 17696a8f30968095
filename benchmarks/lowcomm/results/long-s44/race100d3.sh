#!/bin/bash
# Session 44: streaming at delay 3 on seed 2 (where delay 2 waited 0.34 of DiLoCo's), against DiLoCo in the same
# invocation (2 hosts x 1 rank, 100 Mbit/s, 2000 steps each).
cd /work/main
python -m benchmarks.lowcomm.race --hosts 2 --rates 100mbit --seeds 2 --timeout 1200 \
  --run diloco="--method diloco" \
  --run streaming-d3="--method diloco --fragments 5 --delay 3" \
  --out /work/results/s44/race-100m-d3.jsonl -- --steps 2000 --sync-every 50 --eval-every 100 --warmup 100 --decay cosine
echo "== $(date +%T) race done"
