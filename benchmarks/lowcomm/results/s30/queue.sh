#!/bin/bash
# Session 30's queue after race4-sparse.sh: the lr sweep, then the peers.
while pgrep -f race4-sparse.sh > /dev/null; do sleep 5; done
/work/results/s30/lowcomm/race4-sparse-lr.sh > /work/results/s30/lowcomm/race4-sparse-lr.log 2>&1
echo rc=$? >> /work/results/s30/lowcomm/race4-sparse-lr.log
/work/results/s30/lowcomm/race4-peers.sh > /work/results/s30/lowcomm/race4-peers.log 2>&1
echo rc=$? >> /work/results/s30/lowcomm/race4-peers.log
