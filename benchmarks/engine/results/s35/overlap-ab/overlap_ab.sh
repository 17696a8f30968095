# LIGHTCC_OVERLAP=on against the default (auto: off on one host with one core a rank), alternating, one launch each
cd "$(dirname "$0")/../../../main" 2>/dev/null || cd /work/main
for r in 1 2 3 4 5 6; do for v in on auto; do
  echo "$r $v $(LIGHTCC_OVERLAP=$v lightccrun -np 2 python examples/pytorch/pytorch_synthetic_benchmark.py --model mlp25m --batch-size 32 --num-warmup-batches 2 --num-batches-per-iter 5 --num-iters 8 --num-threads 1 --contenders bound,barrier,lightcc 2>&1 | grep -E "img/sec in total" | sed 's/\[0\]<stdout>://' | tr '\n' ' ') load $(cut -d' ' -f1 /proc/loadavg)"
done; done
