#!/usr/bin/env bash
# Issue 18 item 3 in one device call, from the source root: ctp's bf16
# training step (ctp minimize --amp bf16, SGD) against PyTorch eager and
# torch.compile (bench/gpu/torch_step.py, autocast bf16) on ResNet-50 (batch
# 64) and BERT-large (8 x 512, ctp with --attention flash), all on one GPU.
# Builds and runs GPU_TESTS through real_models_run.sh (tests; SETUP=0: the
# build in BUILD is there already), then REPS
# rounds, each ctp ResNet-50, eager ResNet-50, ctp BERT-large, eager
# BERT-large (interleaved, so that a drift of the machine shows on both
# sides), then torch.compile once per model (it compiles for a minute). The
# figures: ctp's compute-stream time per step (--profile, 10 steps after the
# first; it also counts the profile's own events between ops) and peak
# tensor memory; PyTorch's median (and min) of 20 steps between CUDA events
# and torch.cuda.max_memory_allocated. Stops starting runs once LIMIT_S
# seconds have passed (default 540), so that one call ends in time; the
# table of every figure is printed last. NO_COMPILE=1 leaves torch.compile
# out; ALT=DIR (and ALT_LABEL) adds the runs of a second ctp build (alt_run).
#
#   bash bench/gpu/issue18_compare.sh OUT_DIR CLI11_PREFIX
set -u
OUT=${1:?OUT_DIR}
CLI11=${2:?CLI11_PREFIX}
REPS=${REPS:-3}
LIMIT_S=${LIMIT_S:-540}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
B=${BUILD:-build}
START=$(date +%s)
mkdir -p "$OUT"
if [ "${SETUP:-1}" != 0 ]; then
  BUILD=$B bash bench/gpu/real_models_run.sh "$OUT/setup" "$CLI11" tests || exit 1
fi
LOG=$OUT/compare.log
W=/tmp/i18
mkdir -p $W
left() { [ $(( $(date +%s) - START )) -lt "$LIMIT_S" ]; }

# ctp's programs: NAME MODEL_ARGS...
prepare() {
  local name=$1; shift
  local loss
  loss=$($B/samples/ctp_sample_models "$@" -o $W/$name | sed -n 's/.*loss \([^ ]*\).*/\1/p')
  $B/ctp minimize --startup $W/$name/startup.pb --main $W/$name/main.pb --loss "$loss" \
    --amp bf16 --optimizer sgd --learning-rate 0.0001 -o $W/${name}_amp >> "$LOG" 2>&1
}
prepare r50 resnet --depth 50
prepare bert bert --attention flash

# One run, its figure appended to the table: LABEL COMMAND...
run() {
  local label=$1; shift
  left || { echo "skipped (time) $label" | tee -a "$LOG"; return; }
  echo "+ $label: $*" >> "$LOG"
  local text
  text=$(timeout 200 "$@" 2>&1)
  echo "$text" >> "$LOG"
  local figure
  figure=$(echo "$text" | sed -n -e 's/.*per step: .* ms host, \([0-9.]*\) ms on the compute stream.*/ctp \1 ms/p' \
    -e 's/^peak tensor memory on cuda: \([0-9.]*\) MiB.*/peak \1 MiB/p' \
    -e 's/.*median \([0-9.]*\) ms per step over [0-9]* (min \([0-9.]*\)).*peak \([0-9.]*\) GiB.*/median \1 ms, min \2 ms, peak \3 GiB/p' | tr '\n' ' ')
  echo "$label | ${figure:-no figure (see compare.log)}" | tee -a "$OUT/table.txt"
}

ctp_run() {  # NAME BATCH [BUILD LABEL]
  run "${4:-ctp} $1 round $r" ${3:-$B}/ctp run --device gpu --startup $W/$1_amp/startup.pb \
    --main $W/$1_amp/main.pb --batch "$2" --steps 11 --profile
}
# ALT=DIR: another build of ctp (other CUDA architectures, say) that runs the
# same programs in each round, labelled ALT_LABEL.
alt_run() {  # NAME BATCH
  [ -n "${ALT:-}" ] && ctp_run "$1" "$2" "$ALT" "ctp (${ALT_LABEL:-alt})"
}
torch_run() {  # MODEL BATCH [--compile]
  run "torch $1 ${3:-eager} round $r" python3 bench/gpu/torch_step.py --model "$1" --mode train \
    --precision bf16 --batch "$2" ${3:-}
}

for r in $(seq "$REPS"); do
  ctp_run r50 64
  alt_run r50 64
  torch_run resnet50 64
  ctp_run bert 8
  alt_run bert 8
  torch_run bert 8
done
r=1
if [ "${NO_COMPILE:-0}" != 1 ]; then
  torch_run resnet50 64 --compile
  torch_run bert 8 --compile
fi
echo "== $(date -u +%T), $(( $(date +%s) - START )) s"
cat "$OUT/table.txt"
