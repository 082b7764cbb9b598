#!/usr/bin/env bash
# Issue 18 on one GPU, from the source root: build the CUDA backend, then any of
# (comma-separated WHAT):
#   tests    ctp_gpu_tests (GPU_TESTS: a gtest filter, default every test; built only
#            when asked for)
#   fwd      ResNet-50 forward with its loss, FP32, batch 64: ctp (true FP32,
#            then --conv-tf32) against PyTorch eager (fp32, tf32)
#   train    ResNet-50 training step (SGD), FP32, batch 64: ctp against PyTorch eager
#   grads    torch_grad_check.py: ResNet-50 (batch 8), then BERT (BERT_ARGS, default
#            a 2-layer 256-hidden one; "--attention flash" among them checks ctp's
#            flash_attn BERT against BertModel)
#   gradsb   grads' BERT alone (no ResNet-50), BERT_ARGS as there
#   bertl    torch_grad_check.py on BERT-large (24 x 1024, 16 heads), 2 x 512 tokens
#   ampr     ResNet-50 training step (SGD), batch 64, BF16 mixed precision: ctp
#            (ctp minimize --amp bf16) against PyTorch eager and torch.compile
#            (autocast bf16)
#   ampb     the same for BERT-large, 8 x 512 tokens
#   ampbs    ctp alone on ampb's BERT-large with softmax in BF16 too
#            (ctp minimize --amp-white-list softmax)
#   ampbf    ampb's BERT-large both ways in one call: ctp with its attention op by
#            op, ctp with one flash_attn op per layer (ctp_sample_models bert
#            --attention flash), then the PyTorch peers (eager, torch.compile)
#   ampbff   ampbf's flash-attention BERT-large alone (ctp, then the peers)
# WALL=1 adds a 1-step run before each profiled ctp run (wall time per step from the
# difference); NO_COMPILE=1 leaves out the torch.compile peers of ampr/ampb;
# KEEP_ALL=1 adds a profiled ctp run with --keep-all-vars to ampr/ampb (every
# intermediate kept, as before the executor freed them); BUILD=DIR builds there
# (default build; a directory outside the carried tree survives between calls
# to a warm machine); TORCH_PROFILE=1 prints torch.profiler's ops of 3 eager steps;
# REPEAT=N runs ctp and eager N processes each in ampr/ampb (the spread across processes).
# Every ctp run is timed two ways: per op on the compute stream (--profile, first
# step not counted) and in wall time; peak memory of every process is sampled
# with nvidia-smi (the whole process: CUDA context and caches too), PyTorch's own
# peak (torch.cuda.max_memory_allocated) is printed beside.
#
#   bash bench/gpu/real_models_run.sh OUT_DIR CLI11_PREFIX WHAT
set -u
OUT=${1:?OUT_DIR}
CLI11=${2:?CLI11_PREFIX}
WHAT=${3:?WHAT}
want() { [[ ",$WHAT," == *",$1,"* ]]; }
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
LOG=$OUT/run.log
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())'
} >> "$LOG" 2>&1
B=${BUILD:-build}
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCTP_WITH_GLOO=OFF -DCTP_WITH_CUDA=ON \
  -DCTP_WITH_PYTHON=OFF -DCTP_BUILD_BENCH=OFF -DCMAKE_PREFIX_PATH="$CLI11" \
  -DCMAKE_CXX_FLAGS="-I$CLI11/include" > "$OUT/build.log" 2>&1 &&
cmake --build "$B" -j16 --target ctp_cli ctp_cuda ctp_sample_models $(want tests && echo ctp_gpu_tests) \
  >> "$OUT/build.log" 2>&1
if [ $? -ne 0 ]; then
  echo "BUILD FAILED"; grep -E "error" "$OUT/build.log" | head -40; exit 1
fi
echo "build ok $(date -u +%T)" | tee -a "$LOG"
CTP=$B/ctp
MODELS=$B/samples/ctp_sample_models
W=/tmp/r18
mkdir -p $W

# Runs a command, logging it, its output, its wall time and the GPU memory's
# peak (nvidia-smi every 50 ms, minus what was in use before).
measure() {
  local limit=$1; shift
  local base; base=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 50 > $W/mem.txt 2>/dev/null &
  local sampler=$!
  echo "+ $*" | tee -a "$LOG"
  local t0; t0=$(date +%s.%N)
  timeout "$limit" "$@" 2>&1 | tee -a "$LOG" | tail -25
  local rc=${PIPESTATUS[0]}
  local t1; t1=$(date +%s.%N)
  kill $sampler 2>/dev/null; wait $sampler 2>/dev/null
  local peak; peak=$(sort -n $W/mem.txt | tail -1)
  echo "= rc $rc, wall $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") s, GPU memory peak $((peak - base)) MiB over $base MiB" | tee -a "$LOG"
}

if want tests; then
  measure 240 $B/tests/ctp_gpu_tests --gtest_filter="${GPU_TESTS:-*}"
fi

if want fwd || want train; then
  $MODELS resnet --depth 50 -o $W/r50 | tee -a "$LOG"
  python3 -c "
import numpy as np; r = np.random.default_rng(0)
np.save('$W/img.npy', r.standard_normal((64, 3, 224, 224), dtype=np.float32))
np.save('$W/lab.npy', r.integers(0, 1000, (64, 1), dtype=np.int64))"
  FEEDS="--batch 64 --feed image=$W/img.npy --feed label=$W/lab.npy"
fi
if want fwd; then
  for tf in "" "--conv-tf32"; do
    [ -n "${WALL:-}" ] && measure 120 $CTP run --device gpu --startup $W/r50/startup.pb --main $W/r50/main.pb $FEEDS --steps 1 $tf
    measure 120 $CTP run --device gpu --startup $W/r50/startup.pb --main $W/r50/main.pb $FEEDS --steps 21 $tf --profile
  done
  measure 120 python3 bench/gpu/torch_step.py --model resnet50 --mode forward --precision fp32
  measure 120 python3 bench/gpu/torch_step.py --model resnet50 --mode forward --precision tf32
fi
if want train; then
  loss=$($MODELS resnet --depth 50 -o $W/r50 | sed -n 's/.*loss \([^ ]*\).*/\1/p')
  $CTP minimize --startup $W/r50/startup.pb --main $W/r50/main.pb --loss "$loss" \
    --optimizer sgd --learning-rate 0.0001 -o $W/r50t | tee -a "$LOG"
  for tf in "" "--conv-tf32"; do
    [ -n "${WALL:-}" ] && measure 120 $CTP run --device gpu --startup $W/r50t/startup.pb --main $W/r50t/main.pb $FEEDS --steps 1 $tf
    measure 150 $CTP run --device gpu --startup $W/r50t/startup.pb --main $W/r50t/main.pb $FEEDS --steps 11 $tf --profile
  done
  measure 120 python3 bench/gpu/torch_step.py --model resnet50 --mode train --precision fp32
  measure 120 python3 bench/gpu/torch_step.py --model resnet50 --mode train --precision tf32
fi
if want grads; then
  measure 200 python3 bench/gpu/torch_grad_check.py --ctp $CTP --models $MODELS --model resnet50 --batch 8 --work $W/gc_r50
fi
if want grads || want gradsb; then
  measure 200 python3 bench/gpu/torch_grad_check.py --ctp $CTP --models $MODELS --model bert --work $W/gc_bert \
    ${BERT_ARGS:---layers 2 --hidden 256 --heads 4 --seq-len 128 --batch 4}
fi
if want bertl; then
  measure 240 python3 bench/gpu/torch_grad_check.py --ctp $CTP --models $MODELS --model bert --work $W/gc_bertl --batch 2
fi
# A bf16 training step of a model: ctp (--amp bf16, SGD) and its PyTorch peers.
# AMP_ARGS go to ctp minimize; PEERS=0 leaves out the PyTorch peers.
#   amp_train NAME BATCH TORCH_MODEL MODEL_ARGS...
amp_train() {
  local name=$1 batch=$2 torch_model=$3; shift 3
  loss=$($MODELS "$@" -o $W/$name | tee -a "$LOG" | sed -n 's/.*loss \([^ ]*\).*/\1/p')
  $CTP minimize --startup $W/$name/startup.pb --main $W/$name/main.pb --loss "$loss" --amp bf16 \
    ${AMP_ARGS:-} --optimizer sgd --learning-rate 0.0001 -o $W/${name}_amp 2>&1 | tee -a "$LOG"
  local run="$CTP run --device gpu --startup $W/${name}_amp/startup.pb --main $W/${name}_amp/main.pb --batch $batch"
  local r
  for r in $(seq "${REPEAT:-1}"); do
    [ -n "${WALL:-}" ] && measure 200 $run --steps 1
    measure 240 $run --steps 11 --profile
  done
  [ -n "${KEEP_ALL:-}" ] && measure 240 $run --steps 11 --profile --keep-all-vars
  [ "${PEERS:-1}" = 0 ] && return
  for r in $(seq "${REPEAT:-1}"); do
    measure 150 python3 bench/gpu/torch_step.py --model $torch_model --mode train --precision bf16 --batch $batch ${TORCH_PROFILE:+--profile}
  done
  [ -z "${NO_COMPILE:-}" ] &&
    measure 300 python3 bench/gpu/torch_step.py --model $torch_model --mode train --precision bf16 --batch $batch --compile
}
if want ampr; then
  amp_train r50 64 resnet50 resnet --depth 50
fi
if want ampb; then
  amp_train bertl 8 bert bert
fi
if want ampbs; then
  AMP_ARGS="--amp-white-list softmax" PEERS=0 amp_train bertls 8 bert bert
fi
if want ampbf; then
  PEERS=0 amp_train bertl 8 bert bert
  amp_train bertlf 8 bert bert --attention flash
fi
if want ampbff; then
  amp_train bertlf 8 bert bert --attention flash
fi
echo "done $(date -u +%T)" | tee -a "$LOG"
