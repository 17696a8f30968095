#!/bin/bash
# Before (main 749bf53, /work/main's in-place build) vs after (this tree), alternating which goes
# first each round: `lightcc-bench allreduce --compare mpi` at 2 ranks (4 KiB, and 1/16/64 MiB for
# busbw) and 4 KiB at 4, 8 and 16 ranks on one host; `lightcc-bench latency --compare mpi` at 2
# and 4 ranks. Run from /tmp so PYTHONPATH alone picks the tree; each header line carries the
# 1-minute load average taken just before that run.
# OUT (default: this folder), AFTER (default: this tree) and BEFORE (default /work/main) may be set.
OUT=${OUT:-$(cd "$(dirname "$0")" && pwd)}
AFTER=${AFTER:-$(cd "$(dirname "$0")/../../../.." && pwd)}
BEFORE=${BEFORE:-/work/main}
ROUNDS=${ROUNDS:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd /tmp
run() {  # label tree command np sizes
  local label=$1 tree=$2 cmd=$3 np=$4 sizes=$5
  echo "## $label $cmd np=$np sizes=$sizes | load $(cut -d' ' -f1-3 /proc/loadavg)"
  env PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=$tree timeout 600 python -m lightcc.bench $cmd --np $np \
    --compare mpi --sizes $sizes --no-progress --json "$OUT/$label-$cmd-np$np-$round.json" 2>&1 | grep -E "^ +[0-9]"
}
pair() {  # command np sizes: both trees, order alternating by round
  if (( round % 2 )); then run before "$BEFORE" "$@"; run after "$AFTER" "$@"
  else run after "$AFTER" "$@"; run before "$BEFORE" "$@"; fi
}
for round in $(seq 1 $ROUNDS); do
  pair allreduce 2 4K,1M,16M,64M
  pair latency 2 4K
  pair latency 4 4K
  for np in 4 8 16; do pair allreduce $np 4K; done
done
