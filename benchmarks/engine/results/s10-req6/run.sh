#!/bin/bash
# Requirement 6 of issue 22 (latency-bound sizes) after direct steps: before (main 126192e, the
# session-9 tree) vs after (this tree), alternating which goes first each round, every run
# `lightcc-bench ... --compare mpi` (OpenMPI in the same launch). 4 KiB runs take 1,000 timed
# calls after 100 warm-up ones (the default 100 in batches of 10 is a few tens of microseconds
# per batch, where one scheduler hiccup moves the median for either library); 16 MiB the default.
# Each header line carries the 1-minute load average taken just before that run.
# OUT (default: this folder), AFTER (default: this tree), BEFORE (default /work/s10-before),
# ROUNDS (default 5) may be set; ONLY=after (or before) runs that tree alone.
OUT=${OUT:-$(cd "$(dirname "$0")" && pwd)}
AFTER=${AFTER:-$(cd "$(dirname "$0")/../../../.." && pwd)}
BEFORE=${BEFORE:-/work/s10-before}
ROUNDS=${ROUNDS:-5}
ONLY=${ONLY:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd /tmp
run() {  # label tree command np sizes extra...
  local label=$1 tree=$2 cmd=$3 np=$4 sizes=$5; shift 5
  echo "## $label $cmd np=$np sizes=$sizes $* | load $(cut -d' ' -f1-3 /proc/loadavg)"
  env PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=$tree timeout 600 python -m lightcc.bench $cmd --np $np \
    --compare mpi --sizes $sizes "$@" --no-progress --json "$OUT/$label-$cmd-np$np-$sizes-$round.json" 2>&1 | grep -E "^ +[0-9]"
}
pair() {  # command np sizes extra...: both trees, order alternating by round
  if [[ $ONLY == after ]]; then run after "$AFTER" "$@"; return; fi
  if [[ $ONLY == before ]]; then run before "$BEFORE" "$@"; return; fi
  if (( round % 2 )); then run before "$BEFORE" "$@"; run after "$AFTER" "$@"
  else run after "$AFTER" "$@"; run before "$BEFORE" "$@"; fi
}
for round in $(seq 1 $ROUNDS); do
  pair allreduce 2 4K --iters 1000 --warmup 100
  pair allreduce 2 16M
  pair latency 2 4K
  for np in 4 8 16; do pair allreduce $np 4K --iters 1000 --warmup 100; done
done
