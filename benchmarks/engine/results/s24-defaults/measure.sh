#!/bin/bash
# Session 24's issue-44 table: busbw on emulated hosts (3 rounds), DDP on emulated hosts, DDP one host.
set -u
OUT=/work/results/s24/i44
mkdir -p $OUT
cd /work/main
lscpu > $OUT/lscpu.txt
for r in 1 2 3; do
  for hr in 2x1 2x2 4x2; do
    echo "== round $r $hr 1gbit $(cat /proc/loadavg)" 
    timeout 600 lightcc-bench allreduce --hosts $hr --rate 1gbit --no-lightcc --compare gloo,torch-lightcc --sizes 64M --iters 3 --warmup 1 --no-progress --json $OUT/busbw-$hr-1gbit-r$r.json 2>&1 | tail -1
  done
  echo "== round $r 2x1 2gbit/500mbit $(cat /proc/loadavg)"
  timeout 600 lightcc-bench allreduce --hosts 2x1 --rate 2gbit/500mbit --no-lightcc --compare gloo,torch-lightcc --sizes 64M --iters 3 --warmup 1 --no-progress --json $OUT/busbw-2x1-flowcap-r$r.json 2>&1 | tail -1
  echo "== round $r 2x1 unshaped $(cat /proc/loadavg)"
  timeout 600 lightcc-bench allreduce --hosts 2x1 --no-lightcc --compare gloo,torch-lightcc --sizes 64M --iters 5 --warmup 1 --no-progress --json $OUT/busbw-2x1-none-r$r.json 2>&1 | tail -1
done
echo "== ddp one host $(cat /proc/loadavg)"
timeout 1200 python -m benchmarks.ddp_vs_bound --rounds 3 --out $OUT/ddp-onehost 2>&1 | tail -9
for hr in 2x2 2x1; do
  echo "== ddp $hr 1gbit $(cat /proc/loadavg)"
  timeout 1500 python -m benchmarks.ddp_vs_bound --hosts $hr --rate 1gbit --rounds 2 --iters 4 --out $OUT/ddp-$hr 2>&1 | tail -9
done
echo "== ddp 4x2 1gbit $(cat /proc/loadavg)"
timeout 1500 python -m benchmarks.ddp_vs_bound --hosts 4x2 --rate 1gbit --rounds 1 --iters 3 --out $OUT/ddp-4x2 2>&1 | tail -9
echo "== done $(cat /proc/loadavg)"
