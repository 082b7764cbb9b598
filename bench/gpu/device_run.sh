#!/usr/bin/env bash
# One device-machine session's work, from the source root: configure and build
# the CUDA backend, run the GPU tests, then the benchmarks of ctp and of
# PyTorch on the same GPUs, one after the other:
#   (a) all-reduce bus bandwidth, 8 B to 1 GiB (gpu_allreduce_bench, torch_allreduce.py)
#   (b) one step's gradient synchronisation for ResNet-50 and BERT-large
#       gradient shapes (gpu_grad_sync_bench, torch_grad_sync.py)
# OUT_DIR receives build.log (with the machine), gpu_tests.log, bench.log and
# the CSVs: ctp_allreduce(_blocking), torch_allreduce, ctp_grad_sync,
# torch_grad_sync. Each benchmark runs in its own processes, so a crash of one
# costs only its own figures.
#
#   bench/gpu/device_run.sh OUT_DIR CLI11_PREFIX [NGPUS] [WHAT: all|tests|bench]
set -u
OUT=${1:?OUT_DIR}
CLI11=${2:?CLI11_PREFIX}
NGPUS=${3:-2}
WHAT=${4:-all}
# NVLink multicast stays off on shared hosts (see the device notes).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT"
{ date -u; nvidia-smi; nvidia-smi topo -m; /usr/local/cuda/bin/nvcc --version
  python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'
} > "$OUT/build.log" 2>&1

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCTP_WITH_GLOO=OFF -DCTP_WITH_CUDA=ON \
  -DCTP_BUILD_BENCH=ON -DCMAKE_PREFIX_PATH="$CLI11" -DCMAKE_CXX_FLAGS="-I$CLI11/include" \
  >> "$OUT/build.log" 2>&1 &&
cmake --build build -j16 --target ctp_gpu_tests gpu_allreduce_bench gpu_grad_sync_bench \
  >> "$OUT/build.log" 2>&1
if [ $? -ne 0 ]; then
  echo "BUILD FAILED"; grep -E "error|Error" "$OUT/build.log" | head -40; exit 1
fi
echo "build ok"

if [ "$WHAT" = all ] || [ "$WHAT" = tests ]; then
  timeout 300 ./build/tests/ctp_gpu_tests > "$OUT/gpu_tests.log" 2>&1
  echo "ctp_gpu_tests exit $?"
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[       OK|tests ran|Failure|rror|Expected|Which is|actual" \
    "$OUT/gpu_tests.log" | head -60
fi

# Runs one process per GPU of a ctp benchmark; rank 0's output goes to bench.log.
run_ctp() {
  local bench=$1; shift
  local endpoints="" pids=() r
  local base=$((29600 + RANDOM % 200))
  for r in $(seq 0 $((NGPUS - 1))); do endpoints+="${endpoints:+,}127.0.0.1:$((base + r))"; done
  for r in $(seq 0 $((NGPUS - 1))); do
    timeout 240 "./build/bench/$bench" --rank "$r" --nranks "$NGPUS" --endpoints "$endpoints" "$@" \
      > "/tmp/${bench}_rank$r.log" 2>&1 &
    pids+=($!)
  done
  for r in $(seq 0 $((NGPUS - 1))); do
    wait "${pids[$r]}"; local rc=$?
    [ $rc -ne 0 ] && { echo "$bench rank $r exit $rc"; tail -5 "/tmp/${bench}_rank$r.log"; }
  done
  cat "/tmp/${bench}_rank0.log"
}

if [ "$WHAT" = all ] || [ "$WHAT" = bench ]; then
  {
    echo "== (a) all-reduce: ctp (executor) and raw NCCL through ctp's communicator"
    run_ctp gpu_allreduce_bench --csv "$OUT/ctp_allreduce.csv"
    echo "== (a) all-reduce: ctp on a blocking NCCL ring (--blocking-ring)"
    run_ctp gpu_allreduce_bench --blocking-ring --csv "$OUT/ctp_allreduce_blocking.csv"
    echo "== (a) all-reduce: torch.distributed"
    timeout 240 torchrun --standalone --nproc_per_node "$NGPUS" bench/gpu/torch_allreduce.py \
      --csv "$OUT/torch_allreduce.csv" 2>&1 | grep -v "^W\|OMP_NUM\|^\*"
    echo "== (b) gradient shapes"
    timeout 120 python3 bench/gpu/model_grad_shapes.py /tmp/grad_shapes.txt 2>&1 | grep -v Warning
    echo "== (b) gradient sync: ctp"
    run_ctp gpu_grad_sync_bench --shapes /tmp/grad_shapes.txt --csv "$OUT/ctp_grad_sync.csv"
    echo "== (b) gradient sync: ctp on a blocking NCCL ring (--blocking-ring)"
    run_ctp gpu_grad_sync_bench --blocking-ring --shapes /tmp/grad_shapes.txt
    echo "== (b) gradient sync: torch"
    timeout 240 torchrun --standalone --nproc_per_node "$NGPUS" bench/gpu/torch_grad_sync.py \
      /tmp/grad_shapes.txt --csv "$OUT/torch_grad_sync.csv" 2>&1 | grep -v "^W\|OMP_NUM\|^\*"
  } > "$OUT/bench.log" 2>&1
  cat "$OUT/bench.log"
fi
