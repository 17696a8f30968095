#!/usr/bin/env bash
# Diagnostics for a rank that dies at init on the GPU machine (native backtrace through cuda-gdb).
set -u
export PYTHONPATH=$PWD PYTHONFAULTHANDLER=1 LIGHTCC_TIMEOUT=20 LIGHTCC_JOB_SECRET=dbg LIGHTCC_HOSTNAME=testhost
export HARP_IFNAME==lo NCCL_SOCKET_IFNAME=lo
two() {  # two NAME CODE: runs CODE as 2 ranks
  local port=$((20000 + RANDOM % 20000))
  echo "--- $1"
  for r in 0 1; do
    LIGHTCC_RANK=$r LIGHTCC_SIZE=2 LIGHTCC_RENDEZVOUS_ADDR=127.0.0.1:$port NCCL_HOSTID=dbg$r timeout 60 python3 -c "$2" > /tmp/dbg_$r.log 2>&1 &
  done
  wait
  for r in 0 1; do echo "rank $r:"; tail -25 /tmp/dbg_$r.log; done
}
echo "--- single rank"
LIGHTCC_RANK=0 LIGHTCC_SIZE=1 LIGHTCC_RENDEZVOUS_ADDR=127.0.0.1:29111 timeout 60 python3 -c "import numpy as np, lightcc as hvd; hvd.init(); print('single', hvd.allreduce(np.ones(3, np.float32), op=hvd.Sum))" 2>&1 | tail -20
two "numpy only" "import numpy as np, lightcc as hvd; hvd.init(); print('np', hvd.allreduce(np.ones(3, np.float32), op=hvd.Sum))"
two "torch first" "import torch, numpy as np, lightcc as hvd; hvd.init(); print('torch-first', hvd.allreduce(np.ones(3, np.float32), op=hvd.Sum))"
two "cupy" "import cupy as cp, lightcc as hvd; hvd.init(); print('cupy', hvd.allreduce(cp.ones(3, cp.float32), op=hvd.Sum))"
two "torch cuda" "import torch, lightcc.torch as hvd; hvd.init(); print('torch', hvd.allreduce(torch.ones(3, device='cuda'), op=hvd.Sum))"
echo "--- rank 0 of the cupy case under cuda-gdb"
port=$((20000 + RANDOM % 20000))
LIGHTCC_RANK=1 LIGHTCC_SIZE=2 LIGHTCC_RENDEZVOUS_ADDR=127.0.0.1:$port NCCL_HOSTID=dbg1 timeout 90 python3 -c "import cupy as cp, lightcc as hvd; hvd.init(); print(hvd.allreduce(cp.ones(3, cp.float32), op=hvd.Sum))" > /tmp/gdb_1.log 2>&1 &
LIGHTCC_RANK=0 LIGHTCC_SIZE=2 LIGHTCC_RENDEZVOUS_ADDR=127.0.0.1:$port NCCL_HOSTID=dbg0 timeout 120 cuda-gdb -q -batch -ex run -ex bt -ex "info threads" --args python3 -c "import cupy as cp, lightcc as hvd; hvd.init(); print(hvd.allreduce(cp.ones(3, cp.float32), op=hvd.Sum))" 2>&1 | grep -v "^\[New Thread\|^\[Thread\|^warning" | tail -60
wait
tail -5 /tmp/gdb_1.log
