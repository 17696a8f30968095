#!/bin/bash
# Session 43: the 100 Mbit/s race over 2000 steps at today's defaults (2 hosts x 1 rank, seed 0):
# DDP over gloo (2000 steps), DiLoCo, Streaming DiLoCo and sparseloco (3000 steps on the 2000-step
# schedule, so their curves can reach DDP's final loss), and local (500 steps, for utilisation).
cd /work/main
python -m benchmarks.lowcomm.race --hosts 2 --rates 100mbit --seeds 0 --timeout 2700 \
  --run ddp-gloo="--method ddp --backend gloo" \
  --run diloco="--method diloco --steps 3000 --schedule-steps 2000" \
  --run streaming="--method diloco --fragments 5 --steps 3000 --schedule-steps 2000" \
  --run sparseloco="--method diloco --compression sparseloco --outer-lr 2 --outer-momentum 0 --steps 3000 --schedule-steps 2000" \
  --run local="--method local --steps 500" \
  --out /work/results/s43/race-100m.jsonl -- --steps 2000 --sync-every 50 --eval-every 100 --warmup 100 --decay cosine
echo "== $(date +%T) race done"
