#!/usr/bin/env bash
# Builds lightcc on the GPU machine and runs every GPU check in one call; prints one log.
# Usage (repo root, on a machine with an NVIDIA GPU, torch+CUDA, nvidia-nccl, CuPy, nvcc):
#   OUT=/some/dir tests/gpu/run.sh [phase ...]
#   phases: env build kernels smoke net torch cupy jax harp lowcomm features elastic wheel ddp-cpu
#           bench-resnet50 bench-vgg16 bench-2d
#   FEATURES_K=EXPR runs only the feature tests that pytest's -k EXPR selects (a budget's remainder).
#   (bench = the three bench phases; each fits one 10-minute call of the device tool on its own)
#   torch includes the torch.distributed backend on CUDA tensors (tests/gpu/test_c10d_gpu.py).
#   wheel installs the binary wheels from wheelhouse/ (built on a machine with PyPI: packaging/
#   build_wheel.sh and build_cuda_wheel.sh; carried to the GPU machine) into a venv beside this
#   machine's torch, and checks that the core loads the kernels and finds the GPU.
#   ddp-cpu measures DDP over lightcc against the compute bound on this machine's CPU cores
#   (python -m benchmarks.ddp_vs_bound: 2 ranks x 1 thread, the engine threads on cores of their own).
set -uo pipefail
OUT=${OUT:-/tmp/lightcc-gpu}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
phases=("$@")
[ ${#phases[@]} -eq 0 ] && phases=(env build kernels smoke net cupy jax torch harp lowcomm features elastic wheel ddp-cpu bench)
status=0
# Ranks that share one GPU from separate processes are time-sliced by the driver: a collective
# waits for its peer's kernel to get the GPU, about 5 ms a call whatever the network. Under MPS
# their kernels run side by side, as on separate GPUs, so the network is what gets measured.
# The daemon is this run's own (private pipe directory) and quits when the run ends. Phases that
# kill a rank run with it stopped: under MPS a client killed mid-work takes a fatal error to
# every client of the GPU (seen 2026-11-27: the survivors got "illegal memory access"), which
# separate GPUs or hosts never see.
MPS_PIPE=${TMPDIR:-/tmp}/lightcc-mps-pipe.$$ MPS_LOG=${TMPDIR:-/tmp}/lightcc-mps-log.$$
mps_wanted=0
[ "${LIGHTCC_GPU_MPS:-1}" = 1 ] && command -v nvidia-cuda-mps-control >/dev/null && mps_wanted=1
mps_start() {  # this run's daemon, where wanted and not running
  [ $mps_wanted = 1 ] && [ -z "${CUDA_MPS_PIPE_DIRECTORY:-}" ] || return 0
  mkdir -p "$MPS_PIPE" "$MPS_LOG"
  if CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE CUDA_MPS_LOG_DIRECTORY=$MPS_LOG nvidia-cuda-mps-control -d; then
    export CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE CUDA_MPS_LOG_DIRECTORY=$MPS_LOG
    echo "=== MPS: on (LIGHTCC_GPU_MPS=0 turns it off)"
  else
    echo "=== MPS: could not start; ranks are time-sliced"
  fi
}
mps_stop() {
  [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] || return 0
  echo quit | nvidia-cuda-mps-control
  # quit returns before the server has gone; a client started meanwhile would still join it
  for _ in $(seq 50); do pgrep -f "nvidia-cuda-mps-(control|server)" >/dev/null || break; sleep 0.2; done
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  echo "=== MPS: stopped"
}
# Its logs come back with the run: a server that died mid-run (error 805 in every later client,
# seen 2026-11-27 in the features phase) says why in server.log.
trap 'mps_stop; for f in "$MPS_LOG"/*.log; do [ -e "$f" ] && cp "$f" "$OUT/mps-$(basename "$f")"; done; \
  rm -rf "$MPS_PIPE" "$MPS_LOG"' EXIT
[ $mps_wanted = 1 ] || echo "=== MPS: off; ranks sharing the GPU are time-sliced"
mps_start
child=
trap '[ -n "$child" ] && kill -TERM "$child" 2>/dev/null; echo "=== stopped by a signal"; exit 143' TERM INT
step() {  # step NAME TIMEOUT CMD...: runs one check, logs its verdict
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  echo "=== $name ($(date -u +%H:%M:%S))"
  # In the background and waited for, so a TERM from an outer limit runs the trap below at once
  # (bash defers traps while a foreground child runs) and the MPS logs still come back.
  timeout --kill-after=10 "$limit" "$@" &
  child=$!
  wait "$child"
  local rc=$?
  echo "=== $name: $([ $rc -eq 0 ] && echo PASS || echo "FAIL rc=$rc") in $((SECONDS - t0)) s"
  # What a step leaves behind: leaked ranks are MPS clients too (the daemon takes a bounded number).
  echo "=== after $name: $(pgrep -c -f "$PY" || true) $PY processes alive$( [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && \
    echo "; MPS servers: $(echo get_server_list | nvidia-cuda-mps-control 2>&1 | tr '\n' ' ')")"
  [ $rc -eq 0 ] || status=1
}
for phase in "${phases[@]}"; do
  case $phase in
    env)
      step env 60 bash -c "nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; uname -r; \
        $PY -c 'import sys,torch,cupy,numpy;print(sys.version.split()[0],\"torch\",torch.__version__,\"cuda\",torch.version.cuda,\"nccl\",torch.cuda.nccl.version(),\"cupy\",cupy.__version__,\"numpy\",numpy.__version__)'; \
        nvcc --version | tail -2; cmake --version | head -1; which compute-sanitizer; \
        $PY -c 'import nvidia.nccl,os;print(\"nccl wheel\", os.listdir(os.path.join(list(nvidia.nccl.__path__)[0],\"lib\")))'"
      ;;
    build)
      step build 480 bash -c "CUDAARCHS=90 LIGHTCC_BUILD_JOBS=16 LIGHTCC_BUILD_TESTS=1 $PY setup.py build_ext --inplace > $OUT/build.log 2>&1 || { tail -60 $OUT/build.log; exit 1; }; ls lightcc/lib; $PY -m lightcc.runner.launch --check-build"
      ;;
    kernels)
      if [ -x build/gpu_tests/kernels_test ]; then
        step kernels 120 build/gpu_tests/kernels_test
        step kernels-sanitizer 240 compute-sanitizer --error-exitcode 3 build/gpu_tests/kernels_test --quick
      else
        echo "=== kernels: no kernels_test built"
      fi
      ;;
    smoke)
      step smoke 330 $PY -m tests.gpu.smoke.run
      ;;
    net)
      step nccl-net 420 $PY -m benchmarks.gpu.nccl_net --out "$OUT/net"
      ;;
    torch)
      step torch-device 420 $PY -m pytest -q -p no:cacheprovider tests/gpu -k torch
      ;;
    cupy)
      step cupy 300 $PY -m pytest -q -p no:cacheprovider tests/gpu -k cupy
      ;;
    jax)
      step jax 240 $PY -m pytest -q -p no:cacheprovider tests/gpu -k jax
      ;;
    harp)
      step harp-nccl 180 $PY -m pytest -x -q -p no:cacheprovider tests/gpu/test_harp_nccl.py
      ;;
    lowcomm)  # SparseLoCo's rows, and the chunked codecs' (int8, int4, fp8, e3m0), from CUDA tensors against CPU ones
      step lowcomm 120 $PY -m pytest -v -p no:cacheprovider tests/gpu/test_sparse_codec_gpu.py tests/gpu/test_float_codecs_gpu.py
      ;;
    features)  # streams, order/cost fusion, pacing off, autotune converging (elastic skips itself under MPS)
      step features 580 $PY -m pytest -v -p no:cacheprovider tests/gpu/test_features_gpu.py ${FEATURES_K:+-k "$FEATURES_K"}
      ;;
    elastic)  # a rank killed with SIGKILL, communicators rebuilt: without MPS (see mps_stop)
      mps_stop
      step elastic 180 $PY -m pytest -v -p no:cacheprovider tests/gpu/test_features_gpu.py -k elastic
      mps_start
      ;;
    wheel)
      step wheel 300 bash -c "set -e; ls wheelhouse/lightcc-*manylinux*.whl wheelhouse/lightcc_cuda*.whl; \
        rm -rf $OUT/wheel-venv; $PY -m venv --system-site-packages $OUT/wheel-venv; \
        $OUT/wheel-venv/bin/pip install -q --no-deps --no-index wheelhouse/lightcc-*manylinux*.whl wheelhouse/lightcc_cuda*.whl; \
        cd $OUT && env -u PYTHONPATH $OUT/wheel-venv/bin/lightccrun --check-build | tee $OUT/wheel-check.txt; \
        grep -q '\\[X\\] CUDA kernels' $OUT/wheel-check.txt && grep -q '\\[X\\] CUDA GPU' $OUT/wheel-check.txt"
      ;;
    ddp-cpu)
      step ddp-cpu 580 $PY -m benchmarks.ddp_vs_bound --model mlp25m --rounds 3 --out "$OUT/ddp-cpu"
      ;;
    bench|bench-resnet50|bench-vgg16|bench-2d)
      # The four-way grid (DDP/lightcc x Socket/HARP), 3 repeats round-robin; 2D against flat at
      # 4 ranks as 2 "hosts" x 2. Results: $OUT/synthetic-*/synthetic.json.
      if [ "$phase" = bench ] || [ "$phase" = bench-resnet50 ]; then
        step synthetic-resnet50 580 $PY -m benchmarks.gpu.synthetic --models resnet50 --budget 560 --out "$OUT/synthetic-resnet50"
      fi
      if [ "$phase" = bench ] || [ "$phase" = bench-vgg16 ]; then
        step synthetic-vgg16 580 $PY -m benchmarks.gpu.synthetic --models vgg16 --budget 560 --out "$OUT/synthetic-vgg16"
      fi
      if [ "$phase" = bench ] || [ "$phase" = bench-2d ]; then
        step synthetic-2d 580 $PY -m benchmarks.gpu.synthetic --models resnet50 --np 4 --ranks-per-host 2 \
          --configs ddp-harp,lightcc-harp,lightcc-harp-2d --budget 560 --out "$OUT/synthetic-2d"
      fi
      ;;
  esac
done
echo "=== overall: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
