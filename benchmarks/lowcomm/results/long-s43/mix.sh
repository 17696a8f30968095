#!/bin/bash
# Session 43: Streaming DiLoCo's merge α and delay τ at today's outer momentum 0.5 (2 workers, 5 fragments,
# seed 0, 2000 steps, loopback, quality only); α = 0.5, τ = 1 (the defaults) is session 38's 1.868.
cd /work/main
while pgrep -f "race100w.sh" > /dev/null; do sleep 10; done
COMMON="--sync-every 50 --steps 2000 --eval-every 100 --warmup 100 --decay cosine --seed 0 --fragments 5"
for K in "--delay 1 --mix 0" "--delay 1 --mix 0.25" "--delay 0"; do
  echo "== $(date +%T) streaming $K"
  timeout 1200 lightccrun -np 2 python -m benchmarks.lowcomm.train --method diloco $K $COMMON \
    --out /work/results/s43/streaming-mix.jsonl 2>&1 | grep -v RESULT | tail -2
done
echo "== $(date +%T) mix done"
