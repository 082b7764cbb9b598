#!/usr/bin/env bash
# One device-machine session's work, from the source root: configure and build
# the CUDA backend, then any of (comma-separated WHAT, default all):
#   tests   ctp_gpu_tests (every GPU test)
#   train   the sample trainer and `ctp run` on GPUs against the CPU: 1 GPU,
#           2 GPUs one process each (ctp launch), 2 GPUs of one process
#           (--threads 2); final parameters compared (bench/gpu/compare_params.py)
#   a       all-reduce bus bandwidth, 8 B to 1 GiB: ctp (default ring, and the
#           non-blocking ring) against torch.distributed, same run
#   b       one step's gradient synchronisation for ResNet-50 and BERT-large
#           gradient shapes (gpu_grad_sync_bench, torch_grad_sync.py)
#   c       a training step of the sample MLP at 1 and NGPUS GPUs, ctp against
#           PyTorch (DDP) on the same model (bench/gpu/torch_mlp_ddp.py), in FP32
#           and bf16 mixed precision (AMPS="none bf16")
#   s       (b) over a real step (bench/gpu/step_sync_run.sh): what gradient
#           synchronisation adds to a training step of ResNet-50 (64 images
#           per GPU) and BERT-large (8 x 512 tokens per GPU), bf16, SGD: ctp
#           (ctp_sample_trainer --model resnet|bert through ctp launch,
#           grad_allreduce per gradient and in 25 MiB buckets) against the
#           same workers without communication, PyTorch DDP against the same
#           model without DDP (bench/gpu/torch_real_step.py), all at NGPUS
#           GPUs in the same run; NGPUS=1 measures the steps without
#           communication only
# OUT_DIR receives build.log (with the machine), one log per part (gpu_tests,
# train, bench_a, bench_b, bench_c) and the CSVs. Each benchmark runs in its
# own processes, ctp and PyTorch one after the other on the same GPUs.
# (bench_s, ctp_real_step.csv and torch_real_step.csv for part s.)
#
#   bench/gpu/device_run.sh OUT_DIR CLI11_PREFIX [NGPUS] [WHAT]
set -u
OUT=${1:?OUT_DIR}
CLI11=${2:?CLI11_PREFIX}
NGPUS=${3:-2}
WHAT=${4:-all}
[ "$WHAT" = all ] && WHAT=tests,train,a,b,c,s
want() { [[ ",$WHAT," == *",$1,"* ]]; }
# NVLink multicast stays off on shared hosts (see the device notes).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT"
{ date -u; git log -1 --format='commit %H' 2>/dev/null; nvidia-smi; nvidia-smi topo -m
  /usr/local/cuda/bin/nvcc --version
  python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'
} > "$OUT/build.log" 2>&1

targets="ctp_gpu_tests ctp_cli ctp_sample_trainer gpu_allreduce_bench"
want b && targets+=" gpu_grad_sync_bench"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCTP_WITH_GLOO=OFF -DCTP_WITH_CUDA=ON \
  -DCTP_BUILD_BENCH=ON -DCMAKE_PREFIX_PATH="$CLI11" -DCMAKE_CXX_FLAGS="-I$CLI11/include" \
  >> "$OUT/build.log" 2>&1 &&
cmake --build build -j16 --target $targets >> "$OUT/build.log" 2>&1
if [ $? -ne 0 ]; then
  echo "BUILD FAILED"; grep -E "error|Error" "$OUT/build.log" | head -40; exit 1
fi
echo "build ok ($(date -u +%T))"
CTP=./build/ctp
TRAINER=./build/samples/ctp_sample_trainer

if want tests; then
  timeout 300 ./build/tests/ctp_gpu_tests > "$OUT/gpu_tests.log" 2>&1
  echo "ctp_gpu_tests exit $? ($(date -u +%T))"
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[       OK|tests ran|Failure|rror|Expected|Which is|actual" \
    "$OUT/gpu_tests.log" | head -80
fi

free_base_port() { echo $((29600 + RANDOM % 300)); }

if want train; then
  T=/tmp/ctp_train; rm -rf "$T"; mkdir -p "$T"
  # Small model, the trainer's defaults; GPU and CPU runs must end with the
  # same parameters within FP32 tolerance.
  common=(--optimizer adam --steps 40 --batch 64 --log-every 10)
  {
    echo "== 1 GPU against the CPU (mode none)"
    $TRAINER --mode none --device cpu "${common[@]}" --save-params "$T/cpu1"
    $TRAINER --mode none --device gpu "${common[@]}" --save-params "$T/gpu1"
    python3 bench/gpu/compare_params.py "$T/cpu1" "$T/gpu1"
    # grad_allreduce needs two endpoints or more (as the reference): the
    # launched runs need NGPUS > 1.
    if [ "$NGPUS" -gt 1 ]; then
    echo "== $NGPUS GPUs, one process each (ctp launch), grad_allreduce, against 1 CPU worker"
    timeout 120 $CTP launch --nproc "$NGPUS" --base-port "$(free_base_port)" -- \
      $TRAINER --mode grad_allreduce --device gpu "${common[@]}" --save-params "$T/gpuN"
    echo "ctp launch exit $?"
    python3 bench/gpu/compare_params.py "$T/cpu1" "$T/gpuN"
    fi
    echo "== $NGPUS GPUs of one process (--threads $NGPUS), single_process_multi_thread, against CPU threads"
    $TRAINER --mode single_process_multi_thread --threads "$NGPUS" --device cpu "${common[@]}" \
      --save-params "$T/cpuT"
    $TRAINER --mode single_process_multi_thread --threads "$NGPUS" --device gpu "${common[@]}" \
      --save-params "$T/gpuT"
    python3 bench/gpu/compare_params.py "$T/cpuT" "$T/gpuT"

    echo "== ctp run --device gpu: a transpiled program, every rank fed the same batch"
    G=tests/golden/grad_allreduce_adam_n2_r1_ring1_multihost
    python3 -c "
import random, sys
sys.path.insert(0, 'bench/gpu')
import npy_lite
rng = random.Random(3)
npy_lite.save('$T/x.npy', (64, 32), [rng.uniform(-1, 1) for _ in range(64 * 32)])
npy_lite.save('$T/label.npy', (64, 1), [rng.randrange(10) for _ in range(64)], '<i8')"
    feeds=(--feed "x=$T/x.npy" --feed "label=$T/label.npy")
    echo "-- CPU, one worker, untranspiled"
    $CTP run --device cpu --startup $G/startup.json --main $G/main.json --steps 5 "${feeds[@]}"
    if [ "$NGPUS" -gt 1 ]; then
    base=$(free_base_port)
    eps=""; for r in $(seq 0 $((NGPUS - 1))); do eps+="${eps:+,}127.0.0.1:$((base + r))"; done
    $CTP transpile --mode grad_allreduce --all-ranks --endpoints "$eps" \
      --startup $G/startup.json --main $G/main.json -o "$T/ga"
    echo "-- $NGPUS GPUs, ctp launch, grad_allreduce (same batch on every rank: same losses)"
    timeout 120 $CTP launch --nproc "$NGPUS" --base-port "$base" -- \
      $CTP run --device gpu --startup "$T/ga/rank_{rank}/startup.pb" \
      --main "$T/ga/rank_{rank}/main.pb" --steps 5 "${feeds[@]}"
    echo "ctp launch exit $?"
    fi
    $CTP transpile --mode single_process_multi_thread --endpoints 127.0.0.1:6170 --rank 0 \
      --selected-gpus "$(seq -s, 0 $((NGPUS - 1)))" \
      --startup $G/startup.json --main $G/main.json -o "$T/spmt"
    for dev in cpu gpu; do
      echo "-- --threads $NGPUS on $dev, single_process_multi_thread, synthetic inputs"
      $CTP run --device $dev --threads "$NGPUS" --startup "$T/spmt/startup.pb" \
        --main "$T/spmt/main.pb" --steps 5 --batch 32
    done
  } > "$OUT/train.log" 2>&1
  echo "train done ($(date -u +%T))"; cat "$OUT/train.log"
fi

# Runs one process per GPU of a ctp benchmark; rank 0's output goes to stdout.
run_ctp() {
  local bench=$1; shift
  local endpoints="" pids=() r
  local base=$(free_base_port)
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
torch_quiet() { grep -v "^W\|OMP_NUM\|^\*"; }

if want a; then
  {
    echo "== (a) all-reduce: ctp, default ring (c_gen_nccl_id + c_comm_init)"
    run_ctp gpu_allreduce_bench --csv "$OUT/ctp_allreduce.csv"
    echo "== (a) all-reduce: torch.distributed"
    timeout 240 torchrun --standalone --nproc_per_node "$NGPUS" bench/gpu/torch_allreduce.py \
      --csv "$OUT/torch_allreduce.csv" 2>&1 | torch_quiet
    echo "== (a) all-reduce: ctp on the non-blocking ring (--nonblocking-ring)"
    run_ctp gpu_allreduce_bench --nonblocking-ring --csv "$OUT/ctp_allreduce_nonblocking.csv"
  } > "$OUT/bench_a.log" 2>&1
  echo "bench a done ($(date -u +%T))"; cat "$OUT/bench_a.log"
fi

if want b; then
  {
    echo "== (b) gradient shapes"
    timeout 120 python3 bench/gpu/model_grad_shapes.py /tmp/grad_shapes.txt 2>&1 | grep -v Warning
    echo "== (b) gradient sync: ctp"
    run_ctp gpu_grad_sync_bench --shapes /tmp/grad_shapes.txt --csv "$OUT/ctp_grad_sync.csv"
    echo "== (b) gradient sync: torch"
    timeout 240 torchrun --standalone --nproc_per_node "$NGPUS" bench/gpu/torch_grad_sync.py \
      /tmp/grad_shapes.txt --csv "$OUT/torch_grad_sync.csv" 2>&1 | torch_quiet
  } > "$OUT/bench_b.log" 2>&1
  echo "bench b done ($(date -u +%T))"; cat "$OUT/bench_b.log"
fi

if want c; then
  # The same per-GPU batch at every GPU count (weak scaling, as DDP is used),
  # in FP32 and in each mixed precision of AMPS (ctp --amp against torch.autocast).
  PER_GPU=${PER_GPU:-4096}
  AMPS=${AMPS:-none bf16}
  model=(--dim 1024 --hidden 4096,4096 --classes 16 --samples 16384)
  {
    counts=1; [ "$NGPUS" -gt 1 ] && counts="1 $NGPUS"
    for amp in $AMPS; do
    for n in $counts; do
      batch=$((PER_GPU * n))
      echo "== (c) ctp, $n GPU(s), global batch $batch, amp $amp"
      if [ "$n" = 1 ]; then
        timeout 180 $TRAINER --mode none --device gpu "${model[@]}" --steps 30 --batch $batch \
          --amp $amp --log-every 0
      else
        timeout 180 $CTP launch --nproc "$n" --base-port "$(free_base_port)" -- \
          $TRAINER --mode grad_allreduce --device gpu "${model[@]}" --steps 30 --batch $batch \
          --amp $amp --log-every 0
      fi
      echo "== (c) torch, $n GPU(s), global batch $batch, amp $amp"
      if [ "$n" = 1 ]; then
        timeout 180 python3 bench/gpu/torch_mlp_ddp.py "${model[@]}" --steps 30 --batch $batch --profile \
          --amp $amp --csv "$OUT/torch_mlp.csv" 2>&1 | torch_quiet
      else
        timeout 180 torchrun --standalone --nproc_per_node "$n" bench/gpu/torch_mlp_ddp.py \
          "${model[@]}" --steps 30 --batch $batch --amp $amp --csv "$OUT/torch_mlp.csv" 2>&1 | torch_quiet
      fi
    done
    # Where a ctp step's GPU time goes: the trainer's own per-op profile
    # (CUDA events around every op on the compute stream).
    echo "== (c) ctp --profile, 1 GPU, 12 steps, amp $amp"
    timeout 120 $TRAINER --mode none --device gpu "${model[@]}" --steps 12 --batch $PER_GPU \
      --amp $amp --log-every 0 --profile
    done
  } > "$OUT/bench_c.log" 2>&1
  echo "bench c done ($(date -u +%T))"; cat "$OUT/bench_c.log"
fi

if want s; then
  # The real models (bench/gpu/step_sync_run.sh): ResNet-50 (64 per GPU) and
  # BERT-large (8 x 512 per GPU), bf16, SGD; ctp through ctp launch against
  # PyTorch DDP, each with and without communication.
  CTP=$CTP TRAINER=$TRAINER bash bench/gpu/step_sync_run.sh "$OUT" "$NGPUS" \
    > "$OUT/bench_s.log" 2>&1
  echo "bench s done ($(date -u +%T))"; cat "$OUT/bench_s.log"
fi
