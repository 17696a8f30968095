#!/bin/bash
# Session 45: the 100 Mbit/s race over 2000 steps at today's defaults, seeds 1 and 2 (seed 0: session 43):
# 2 hosts x 1 rank; DDP over gloo (2000 steps); DiLoCo and Streaming DiLoCo (5 fragments, default delay 2)
# 3000 steps on the 2000-step schedule so their curves can reach DDP's final loss; local (500 steps, utilisation).
cd /work/main
python -m benchmarks.lowcomm.race --hosts 2 --rates 100mbit --seeds 1 2 --timeout 2700 \
  --run ddp-gloo="--method ddp --backend gloo" \
  --run diloco="--method diloco --steps 3000 --schedule-steps 2000" \
  --run streaming="--method diloco --fragments 5 --steps 3000 --schedule-steps 2000" \
  --run local="--method local --steps 500" \
  --out /work/results/s45/race-100m.jsonl -- --steps 2000 --sync-every 50 --eval-every 100 --warmup 100 --decay cosine
echo "== $(date +%T) race done"
