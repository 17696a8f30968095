#!/usr/bin/env bash
# Same-session before/after: baseline (ba97513, /work/baseline) vs this build (/work/main), interleaved.
set -u
cd /tmp/bench
for round in 1 2 3 4 5; do
  for tree in baseline main; do
    export PYTHONPATH=/work/$tree
    timeout 600 lightcc-bench allreduce --np 2 --compare mpi --json ar-$tree-$round.json > ar-$tree-$round.log 2>&1
    timeout 300 lightcc-bench latency --np 2 --compare mpi --json lat-$tree-$round.json > lat-$tree-$round.log 2>&1
    timeout 300 lightcc-bench negotiation --np 2 --compare mpi --json neg-$tree-$round.json > neg-$tree-$round.log 2>&1
    echo "$(date +%T) round $round $tree done (load $(cut -d' ' -f1 /proc/loadavg))"
  done
done
