#!/usr/bin/env bash
# Session 32: Streaming DiLoCo (5 fragments) at 4 emulated hosts x 1, 100 Mbit/s, seed 0: delay 2 and 5 (τ inner steps of overlap).
cd /work/main
python -m benchmarks.lowcomm.race --hosts 4 --rates 100mbit --seeds 0 \
  --run streaming-d2="--method diloco --steps 600 --fragments 5 --delay 2" \
  --run streaming-d5="--method diloco --steps 600 --fragments 5 --delay 5" \
  --out /work/results/s32/race4-delay.jsonl -- --sync-every 50 --eval-every 25
