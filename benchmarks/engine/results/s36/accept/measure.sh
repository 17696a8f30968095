#!/bin/bash
# Session 36: issue 44's acceptance at one commit (no lightcc flag set), one after another on a quiet machine.
cd /work/main
OUT=/work/results/s36/accept
lscpu > $OUT/lscpu.txt
git -C /work/main log --oneline -1 > $OUT/commit.txt
for spec in "2x1 1gbit" "2x2 1gbit" "4x2 1gbit" "2x1 2gbit/500mbit" "2x1 none"; do
  set -- $spec; hosts=$1; rate=$2
  for round in 1 2; do
    ra=(--rate $rate); [ "$rate" = none ] && ra=()
    tag=$(echo "$hosts-$rate-r$round" | tr '/' '_')
    echo "-- busbw $hosts $rate round $round $(date +%T)"
    lightcc-bench allreduce --hosts $hosts "${ra[@]}" --no-lightcc --compare gloo,torch-lightcc --sizes 64M --iters 3 --warmup 1 --no-progress --json $OUT/busbw-$tag.json 2>&1 | grep -E "^\s*[0-9]|gloo|torch" | tail -4
  done
done
for hosts in 2x1 2x2; do
  echo "-- ddp $hosts 1gbit $(date +%T)"
  python -m benchmarks.ddp_vs_bound --hosts $hosts --rate 1gbit --rounds 2 --out $OUT/ddp-$hosts 2>&1 | tail -8
done
echo "== done $(date)"
