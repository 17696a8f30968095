# front deferral (DistributedOptimizer) and a nice-19 engine thread, on and off, alternating
cd /work/main
for r in 1 2 3; do for v in "NO_DEFER=1" "X=1" "NO_DEFER=1 NICE_ENGINE=1" "NICE_ENGINE=1"; do
  echo "$r [$v] $(env $v lightccrun -np 2 python examples/pytorch/pytorch_synthetic_benchmark.py --model mlp25m --batch-size 32 --num-warmup-batches 2 --num-batches-per-iter 5 --num-iters 8 --num-threads 1 --contenders bound,barrier,lightcc,ddp-lightcc 2>&1 | grep -E "img/sec in total" | sed 's/\[0\]<stdout>://' | tr '\n' ' ') load $(cut -d' ' -f1 /proc/loadavg)"
done; done
