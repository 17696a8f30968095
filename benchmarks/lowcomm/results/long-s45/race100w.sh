#!/bin/bash
# Session 45: streaming's wait on seed 0 at 100 Mbit/s on this machine, after race100.sh (seeds 1 and 2):
# 2 hosts x 1 rank, 2000 steps each, DiLoCo and Streaming DiLoCo (5 fragments, default delay 2).
while pgrep -f "s45/race100.sh" > /dev/null; do sleep 10; done
cd /work/main
python -m benchmarks.lowcomm.race --hosts 2 --rates 100mbit --seeds 0 --timeout 1800 \
  --run diloco="--method diloco" --run streaming="--method diloco --fragments 5" \
  --out /work/results/s45/race-100m-wait.jsonl -- --steps 2000 --sync-every 50 --eval-every 100 --warmup 100 --decay cosine
echo "== $(date +%T) wait race done"
