#!/usr/bin/env bash
# Session 32: plain and Streaming DiLoCo (5 fragments) at 4 emulated hosts x 1, 100 Mbit/s, seeds 0-2, one invocation.
cd /work/main
python -m benchmarks.lowcomm.race --hosts 4 --rates 100mbit --seeds 0 1 2 \
  --run diloco="--method diloco --steps 600" \
  --run streaming="--method diloco --steps 600 --fragments 5" \
  --out /work/results/s32/race4-stream.jsonl -- --sync-every 50 --eval-every 25
