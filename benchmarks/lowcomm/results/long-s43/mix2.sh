#!/bin/bash
# Session 43: after mix.sh (α 0 and 0.25 trailed the default 0.5), α = 0.75 at τ = 1, the same settings.
cd /work/main
while pgrep -f "s43/mix.sh" > /dev/null; do sleep 5; done
COMMON="--sync-every 50 --steps 2000 --eval-every 100 --warmup 100 --decay cosine --seed 0 --fragments 5"
echo "== $(date +%T) streaming --delay 1 --mix 0.75"
timeout 1200 lightccrun -np 2 python -m benchmarks.lowcomm.train --method diloco --delay 1 --mix 0.75 $COMMON \
  --out /work/results/s43/streaming-mix.jsonl 2>&1 | grep -v RESULT | tail -2
echo "== $(date +%T) mix2 done"
