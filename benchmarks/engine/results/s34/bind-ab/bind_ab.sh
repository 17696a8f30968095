#!/usr/bin/env bash
# A/B of LIGHTCC_BIND on one host: none, auto alternating, one round per launch, 3 pairs.
set -u
OUT=${1:-/work/results/s34/bind-ab}
mkdir -p "$OUT"
for i in 1 2 3; do
  for mode in none auto; do
    LIGHTCC_BIND=$mode python -m benchmarks.ddp_vs_bound --model mlp25m --rounds 1 --out "$OUT/$mode-$i" > "$OUT/$mode-$i.log" 2>&1
    echo "$mode-$i rc=$?"
  done
done
