#!/usr/bin/env bash
# A/B of LIGHTCC_BIND on 2 emulated hosts of 2 ranks at 1 Gbit/s: none, auto alternating, one round per launch.
set -u
OUT=${1:-/work/results/s34/bind-hosts-ab}
PAIRS=${PAIRS:-2}
mkdir -p "$OUT"
for i in $(seq "$PAIRS"); do
  for mode in none auto; do
    LIGHTCC_BIND=$mode python -m benchmarks.ddp_vs_bound --hosts 2x2 --rate 1gbit --rounds 1 --out "$OUT/$mode-$i" > "$OUT/$mode-$i.log" 2>&1
    echo "$mode-$i rc=$?"
  done
done
