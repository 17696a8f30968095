#!/usr/bin/env bash
# Session 32: Streaming DiLoCo (5 fragments) at 4 emulated hosts x 1, 100 Mbit/s, seeds 1 and 2: delay 2 (τ inner steps of overlap).
cd /work/main
python -m benchmarks.lowcomm.race --hosts 4 --rates 100mbit --seeds 1 2 \
  --run streaming-d2="--method diloco --steps 600 --fragments 5 --delay 2" \
  --out /work/results/s32/race4-delay2.jsonl -- --sync-every 50 --eval-every 25
