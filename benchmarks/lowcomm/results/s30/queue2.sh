#!/bin/bash
# After queue.sh: sparseloco's defaults on seeds 1 and 2 at 4 hosts.
while pgrep -f lowcomm/queue.sh > /dev/null; do sleep 5; done
/work/results/s30/lowcomm/race4-sparse-defaults.sh > /work/results/s30/lowcomm/race4-sparse-defaults.log 2>&1
echo rc=$? >> /work/results/s30/lowcomm/race4-sparse-defaults.log
