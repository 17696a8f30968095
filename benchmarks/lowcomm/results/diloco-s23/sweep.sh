#!/bin/bash
# usage: sweep.sh OUT "args1" "args2" ...   (one 2-rank run at a time, niced)
out=$1; shift
cd /work/wt-diloco
for a in "$@"; do
  PYTHONPATH=/work/wt-diloco nice -n 15 timeout 600 python -m lightcc.runner -np 2 python -m benchmarks.lowcomm.train $a --out $out > /tmp/last_run.log 2>&1 || echo "FAILED: $a" >> $out.err
done
