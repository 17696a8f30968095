#!/bin/bash
# The rest of session 26's race, one run at a time after the first (r2x1-100m seed 0).
cd /work/main
R=/work/results/s26/race
while pgrep -f "benchmarks.lowcomm.race --hosts 2 --rates 100mbit --seeds 0 " >/dev/null; do sleep 5; done
COMMON="--sync-every 50 --eval-every 25"
TOPK="LIGHT_TOPK_ALLREDUCE=1 LIGHT_TOPK_DENSITY=0.02 LIGHT_TOPK_WARMUP_STEPS=0 LIGHT_TOPK_CLIP=0 LIGHT_TOPK_THRESHOLD=1048576"
python -m benchmarks.lowcomm.race --hosts 2 --rates 100mbit --seeds 0 \
  --run diloco-stream="--method diloco --steps 600 --fragments 5" \
  --run diloco-int8="--method diloco --steps 600 --compression int8" \
  --run diloco-int4="--method diloco --steps 600 --compression int4" \
  --run diloco-topk="$TOPK --method diloco --steps 600 --compression topk --outer-lr 1.0 --outer-momentum 0" \
  --out $R/r2x1-100m.jsonl -- $COMMON >> $R/r2x1-100m-variants.log 2>&1
python -m benchmarks.lowcomm.race --hosts 2 --rates 100mbit --seeds 1 2 \
  --run ddp-gloo="--method ddp --backend gloo" --run diloco="--method diloco --steps 600" \
  --run torchft="--method torchft-diloco --steps 600" --run local="--method local" \
  --out $R/r2x1-100m.jsonl -- $COMMON >> $R/r2x1-100m-seeds.log 2>&1
python -m benchmarks.lowcomm.race --hosts 2 --rates 1gbit --seeds 0 \
  --run ddp-gloo="--method ddp --backend gloo" --run ddp-lightcc="--method ddp" --run diloco="--method diloco --steps 600" \
  --run torchft="--method torchft-diloco --steps 600" --run local="--method local" \
  --out $R/r2x1-1g.jsonl -- $COMMON >> $R/r2x1-1g.log 2>&1
python -m benchmarks.lowcomm.race --hosts 2 --per-host 2 --rates 100mbit --seeds 0 \
  --run ddp-gloo="--method ddp --backend gloo" --run diloco-islands="--method diloco --steps 600 --islands host" \
  --run diloco="--method diloco --steps 600" --run local="--method local" \
  --out $R/r2x2-100m.jsonl -- $COMMON >> $R/r2x2-100m.log 2>&1
python -m benchmarks.lowcomm.race --hosts 4 --rates 100mbit --seeds 0 \
  --run ddp-gloo="--method ddp --backend gloo" --run diloco="--method diloco --steps 600" \
  --run torchft="--method torchft-diloco --steps 600" --run local="--method local" \
  --out $R/r4x1-100m.jsonl -- $COMMON >> $R/r4x1-100m.log 2>&1
echo done > $R/queue.done
