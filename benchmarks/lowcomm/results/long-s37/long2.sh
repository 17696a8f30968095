#!/bin/bash
cd /work/main
SEEDS=0 NP=4 /work/results/s37/long.sh
SEEDS="1 2" NP=2 /work/results/s37/long.sh
echo alldone
