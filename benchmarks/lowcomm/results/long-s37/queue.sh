#!/bin/bash
# After long2: 4-worker seeds 1 2 (DDP, DiLoCo momentum 0.5), then the 1 Gbit/s race (seed 0).
while pgrep -f long2.sh > /dev/null; do sleep 10; done
cd /work/main
OUT=/work/results/s37/long-np4.jsonl
for seed in 1 2; do
for m in "--method ddp" "--method diloco --outer-momentum 0.5"; do
  timeout 1800 lightccrun -np 4 python -m benchmarks.lowcomm.train $m --sync-every 50 --seed $seed --steps 2000 \
     --eval-every 100 --warmup 100 --decay cosine --out $OUT 2>&1 | grep -v RESULT | tail -3
done; done
echo quality-done; date
python -m benchmarks.lowcomm.race --hosts 2 --rates 1gbit --seeds 0 \
  --run ddp-gloo="--method ddp --backend gloo" --run ddp-lightcc="--method ddp" \
  --run diloco="--method diloco --steps 3000 --schedule-steps 2000" \
  --run torchft="--method torchft-diloco" --run local="--method local" \
  --out /work/results/s37/race-1g.jsonl -- --steps 2000 --sync-every 50 --eval-every 100 --warmup 100 --decay cosine \
  --outer-momentum 0.5
echo race-done; date
