#!/bin/bash
# Session 26: the idle engine's slower network polling, A/B at 1 Gbit/s on 2 emulated hosts, after the race queue;
# then the equal-token runs past DDP's steep fall on one host (the loss does not depend on the link).
cd /work/main
while [ ! -f /work/results/s26/race/queue.done ]; do sleep 10; done
R=/work/results/s26/ab; mkdir -p $R
RUNS=(--run ddp-gloo="--method ddp --backend gloo" --run ddp-lightcc="--method ddp" --run diloco="--method diloco --steps 600" --run local="--method local")
python -m benchmarks.lowcomm.race --hosts 2 --rates 1gbit --seeds 0 "${RUNS[@]}" --out $R/before.jsonl -- --sync-every 50 --eval-every 25 > $R/before.log 2>&1
cp /work/build-main/out/_core.cpython-311-x86_64-linux-gnu.so lightcc/_core.new.so && mv lightcc/_core.new.so lightcc/_core.cpython-311-x86_64-linux-gnu.so
python -m benchmarks.lowcomm.race --hosts 2 --rates 1gbit --seeds 0 "${RUNS[@]}" --out $R/after.jsonl -- --sync-every 50 --eval-every 25 > $R/after.log 2>&1
echo done > $R/done
O=/work/results/s26/long/long.jsonl; mkdir -p /work/results/s26/long
for m in "--method ddp" "--method diloco" "--method diloco --fragments 5"; do
  timeout 900 python -m lightcc.runner.launch -np 2 python -m benchmarks.lowcomm.train $m --steps 1200 --sync-every 50 --eval-every 100 --seed 0 --out $O >> /work/results/s26/long/long.log 2>&1
done
echo done > /work/results/s26/long/done
