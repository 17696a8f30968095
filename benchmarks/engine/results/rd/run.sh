#!/bin/bash
# Before (89d8356, /work/before) vs after (this tree), alternating, 3 rounds: 4 KiB and 16 MiB vs
# OpenMPI at 2 ranks, 4 KiB vs OpenMPI at 4 and 8 ranks on one host (shared memory), and the same
# 4 KiB over links (LIGHTCC_FORCE_RING=1) with recursive doubling on (default) and off.
# Run from /tmp so PYTHONPATH alone picks the tree; every log line starts with the load average.
OUT=$(cd "$(dirname "$0")" && pwd)
AFTER=$(cd "$OUT/../../../.." && pwd)
cd /tmp
run() {  # label tree np sizes [env...]
  local label=$1 tree=$2 np=$3 sizes=$4; shift 4
  echo "## $label np=$np sizes=$sizes $* | load $(cut -d' ' -f1-3 /proc/loadavg)"
  env PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=$tree "$@" timeout 300 python -m lightcc.bench allreduce --np $np \
    --compare mpi --sizes $sizes --no-progress --json "$OUT/$label-np$np-$round.json" 2>&1 | grep -E "^ +[0-9]"
}
for round in 1 2 3; do
  run before /work/before 2 4K,16M
  run after "$AFTER" 2 4K,16M
  for np in 4 8; do
    run before /work/before $np 4K
    run after "$AFTER" $np 4K
    run links-rd "$AFTER" $np 4K LIGHTCC_FORCE_RING=1
    run links-ring "$AFTER" $np 4K LIGHTCC_FORCE_RING=1 LIGHTCC_RD_ALLREDUCE_BYTES=0
  done
done
