#!/bin/bash
# One-host DDP/DO knob sweep: each setting 2 rounds of ddp_vs_bound, alternating.
cd /work/main
run() { name=$1; shift; echo "== $name $*"; env "$@" python -m benchmarks.ddp_vs_bound --rounds 2 --out /work/results/s28/knobs/$name 2>&1 | grep -E "^round|^\| (lightcc|ddp-lightcc|ddp-gloo) "; }
run base X=1
run cycle05 HOROVOD_CYCLE_TIME=0.5
run spin500 LIGHTCC_SPIN_US=500
run spin0 LIGHTCC_SPIN_US=0
run chunk4m LIGHTCC_SHM_CHUNK_BYTES=4194304
run base2 X=1
