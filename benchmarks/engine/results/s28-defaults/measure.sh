#!/bin/bash
# Session 28's measurements, one after another on a quiet machine (AMD EPYC family 25 model 17).
cd /work/main
OUT=/work/results/s28
lscpu > $OUT/lscpu.txt
echo "== race 4x1 100mbit: DiLoCo float32, int8, int4 (reduce-scatter form) $(date)"
python -m benchmarks.lowcomm.race --hosts 4 --rates 100mbit --seeds 0 \
  --run diloco="--method diloco --steps 600" \
  --run int8="--method diloco --steps 600 --compression int8" \
  --run int4="--method diloco --steps 600 --compression int4" \
  --out $OUT/race4x1-rs.jsonl -- --sync-every 50 --eval-every 25
echo "== tuning table $(date)"
mkdir -p $OUT/tuning
for spec in "2x1 1gbit" "2x2 1gbit" "4x2 1gbit" "2x1 2gbit/500mbit" "2x1 none"; do
  set -- $spec; hosts=$1; rate=$2
  for round in 1 2; do
    ra=(--rate $rate); [ "$rate" = none ] && ra=()
    tag=$(echo "$hosts-$rate-r$round" | tr '/' '_')
    echo "-- busbw $hosts $rate round $round $(date +%T)"
    lightcc-bench allreduce --hosts $hosts "${ra[@]}" --no-lightcc --compare gloo,torch-lightcc --sizes 64M --iters 3 --warmup 1 --no-progress --json $OUT/tuning/busbw-$tag.json 2>&1 | grep -E "^\s*[0-9]|gloo|torch" | tail -4
  done
done
for hosts in 2x1 2x2; do
  echo "-- ddp $hosts 1gbit $(date +%T)"
  python -m benchmarks.ddp_vs_bound --hosts $hosts --rate 1gbit --rounds 2 --out $OUT/tuning/ddp-$hosts 2>&1 | tail -8
done
echo "== race 2x1 1gbit seeds 1 2 $(date)"
python -m benchmarks.lowcomm.race --hosts 2 --rates 1gbit --seeds 1 2 \
  --run ddp-gloo="--method ddp --backend gloo" \
  --run stream5="--method diloco --steps 600 --fragments 5" \
  --run stream5-w50="--method diloco --steps 600 --fragments 5 --sync-warmup 50" \
  --run local="--method local" \
  --out $OUT/race1g.jsonl -- --sync-every 50 --eval-every 25
echo "== done $(date)"
