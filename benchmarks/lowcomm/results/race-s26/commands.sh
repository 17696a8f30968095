# commands of session 26's race: queue.sh (and the first run, below), ab.sh
python -m benchmarks.lowcomm.race --hosts 2 --rates 100mbit --seeds 0 --run ddp-gloo="--method ddp --backend gloo" --run ddp-lightcc="--method ddp" --run diloco="--method diloco --steps 600" --run torchft="--method torchft-diloco --steps 600" --run local="--method local" --out r2x1-100m.jsonl -- --sync-every 50 --eval-every 25
# r2x1-1g.jsonl's ddp-lightcc and diloco rows ran while the core was being compiled: not quoted (ab/ has clean runs)
