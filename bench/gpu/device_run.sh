#!/usr/bin/env bash
# One device-machine session's work, from the source root: configure and build
# the CUDA backend, run the GPU tests, then the all-reduce benchmarks of ctp
# (bench/gpu_allreduce_bench.cc) and of PyTorch (torch_allreduce.py) on the
# same GPUs, one after the other. Logs and CSVs go to OUT_DIR.
#
#   bench/gpu/device_run.sh OUT_DIR CLI11_PREFIX [NGPUS] [WHAT]
#   WHAT: all (default), tests, bench
set -u
OUT=${1:?OUT_DIR}
CLI11=${2:?CLI11_PREFIX}
NGPUS=${3:-2}
WHAT=${4:-all}
# NVLink multicast stays off on shared hosts (see the device notes).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT"
{ date -u; nvidia-smi; nvidia-smi topo -m; nvcc --version; python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'; } \
  > "$OUT/machine.txt" 2>&1

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCTP_WITH_GLOO=OFF -DCTP_WITH_CUDA=ON \
  -DCTP_BUILD_BENCH=ON -DCMAKE_PREFIX_PATH="$CLI11" -DCMAKE_CXX_FLAGS="-I$CLI11/include" \
  > "$OUT/build.log" 2>&1 &&
cmake --build build -j16 --target ctp_gpu_tests gpu_allreduce_bench >> "$OUT/build.log" 2>&1
if [ $? -ne 0 ]; then
  echo "BUILD FAILED"; grep -E "error|Error" "$OUT/build.log" | head -40; exit 1
fi
echo "build ok"

if [ "$WHAT" = all ] || [ "$WHAT" = tests ]; then
  timeout 300 ./build/tests/ctp_gpu_tests \
    > "$OUT/gpu_tests.log" 2>&1
  echo "ctp_gpu_tests exit $?"
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[       OK|tests ran|Failure|rror" "$OUT/gpu_tests.log" | head -60
fi

if [ "$WHAT" = all ] || [ "$WHAT" = bench ]; then
  endpoints=""
  for r in $(seq 0 $((NGPUS - 1))); do endpoints+="${endpoints:+,}127.0.0.1:$((29610 + r))"; done
  pids=()
  for r in $(seq 0 $((NGPUS - 1))); do
    timeout 240 ./build/bench/gpu_allreduce_bench --rank "$r" --nranks "$NGPUS" \
      --endpoints "$endpoints" --csv "$OUT/ctp_allreduce.csv" > "$OUT/ctp_bench_rank$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; echo "ctp bench rank exit $?"; done
  cat "$OUT/ctp_bench_rank0.log"
  timeout 240 torchrun --standalone --nproc_per_node "$NGPUS" bench/gpu/torch_allreduce.py \
    --csv "$OUT/torch_allreduce.csv" > "$OUT/torch_bench.log" 2>&1
  echo "torch bench exit $?"
  grep -v "^W\|OMP_NUM" "$OUT/torch_bench.log" | tail -32
fi
