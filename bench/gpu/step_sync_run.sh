#!/usr/bin/env bash
# Part (s) of bench/gpu/device_run.sh: what gradient synchronisation adds to
# a real training step, ctp against PyTorch DDP on the same models:
#   resnet50    ResNet-50, 64 images of 3x224x224 per GPU, 1000 classes
#   bert-large  BERT-large (24 layers, hidden 1024, 16 heads, vocabulary
#               30522) with a token-classification head (4 classes), 8 x 512
#               tokens per GPU
# both in bf16 mixed precision with SGD. ctp: ctp_sample_trainer --model
# resnet|bert (the AMP rewrite, append_backward, sgd; --fixed-batch: the
# batch is made once and uploaded every step), through `ctp launch`, one
# process per GPU: without communication (--mode none --rank 0 --world-size
# 1: every worker alone on its GPU and per-GPU batch), then grad_allreduce
# (per gradient, and in 25 MiB buckets) at the global batch NGPUS times the
# per-GPU one; each run's slowest worker's ms per step. PyTorch: the twins
# of bench/gpu/torch_models.py under torchrun, without DDP and with
# (bench/gpu/torch_real_step.py: the same upload and loss read per step).
# Sync overhead = the step with communication minus the step without, on
# each side; the no-communication steps are measured twice (their spread is
# the noise floor). With NGPUS=1 only the no-communication steps run.
#
#   bench/gpu/step_sync_run.sh OUT_DIR NGPUS
#
# Environment: CTP, TRAINER (default ./build/ctp, ./build/samples/
# ctp_sample_trainer); MODELS (default "resnet50 bert-large"); STEPS (20);
# STEP_AMP (bf16); DEVICE (gpu; cpu checks the script on a machine without
# GPUs: Gloo instead of NCCL, PyTorch's part skipped); SMALL=1 (tiny
# configurations, for such a check); BERT_ATTENTION (flash: one flash_attn
# op a layer, as transformers' BertModel runs torch's fused attention; ops:
# Paddle's op-by-op attention). Writes OUT_DIR/ctp_real_step.csv
# ("ctp,MODEL,GPUS,LABEL,MS"), OUT_DIR/torch_real_step.csv and the summary
# of bench/gpu/step_sync_summary.py.
set -u
OUT=${1:?OUT_DIR}
NGPUS=${2:?NGPUS}
CTP=${CTP:-./build/ctp}
TRAINER=${TRAINER:-./build/samples/ctp_sample_trainer}
MODELS=${MODELS:-resnet50 bert-large}
STEPS=${STEPS:-20}
STEP_AMP=${STEP_AMP:-bf16}
DEVICE=${DEVICE:-gpu}
BERT_ATTENTION=${BERT_ATTENTION:-flash}
mkdir -p "$OUT"
free_base_port() { echo $((29600 + RANDOM % 300)); }
torch_quiet() { grep -v "^W\|OMP_NUM\|^\*"; }

# MODEL -> the trainer's model options, the per-GPU batch, the torch twin's
# options, and key: the model's name in both CSVs (torch_real_step.py's).
model_setup() {
  key=$1; [ "$1" = bert-large ] && key=bert
  if [ "${SMALL:-0}" = 1 ]; then
    case $1 in
      resnet50) ctp_model=(--model resnet --depth 18 --width 8 --image-size 32 --classes 10)
                per_gpu=4; torch_model=(--model resnet50 --image-size 32 --classes 10) ;;
      bert-large) ctp_model=(--model bert --layers 2 --hidden-size 32 --heads 2 --seq-len 16
                             --vocab 64 --classes 4 --attention "$BERT_ATTENTION")
                  per_gpu=2; torch_model=(--model bert --layers 2 --hidden 32 --heads 2
                                          --seq-len 16 --vocab 64 --max-position 16) ;;
      *) echo "unknown model $1"; return 1 ;;
    esac
    return 0
  fi
  case $1 in
    resnet50) ctp_model=(--model resnet --depth 50 --width 64 --image-size 224 --classes 1000)
              per_gpu=64; torch_model=(--model resnet50) ;;
    bert-large) ctp_model=(--model bert --layers 24 --hidden-size 1024 --heads 16 --seq-len 512
                           --vocab 30522 --classes 4 --attention "$BERT_ATTENTION")
                per_gpu=8; torch_model=(--model bert) ;;
    *) echo "unknown model $1"; return 1 ;;
  esac
}

# MODEL LABEL LAUNCH(launch|alone) ARGS...: one ctp run; the slowest
# worker's ms per step into the CSV.
ctp_step() {
  local model=$1 label=$2 pre=(); shift 2
  [ "$1" = launch ] && pre=("$CTP" launch --nproc "$NGPUS" --base-port "$(free_base_port)" --)
  shift
  echo "== (s) ctp $model $label, $NGPUS GPU(s), $per_gpu per GPU, amp $STEP_AMP"
  timeout 300 "${pre[@]}" "$TRAINER" --device "$DEVICE" "${ctp_model[@]}" --amp "$STEP_AMP" \
    --optimizer sgd --lr 0.0001 --fixed-batch --steps "$STEPS" --log-every 0 "$@" \
    > /tmp/ctp_real_step.log 2>&1
  echo "exit $?"; grep -E "ms per step|identical|rror" /tmp/ctp_real_step.log
  grep "ms per step" /tmp/ctp_real_step.log | sed -E "s/.*: ([0-9.]+) ms per step.*/\1/" |
    sort -g | tail -1 | sed "s/^/ctp,$key,$NGPUS,$label,/" >> "$OUT/ctp_real_step.csv"
}

# MODEL ARGS...: one PyTorch run (skipped without torch or GPUs).
torch_step() {
  local model=$1; shift
  if [ "$DEVICE" != gpu ] || ! python3 -c 'import torch' 2>/dev/null; then
    echo "== (s) torch $model $*: skipped (no PyTorch or no GPU here)"; return 0
  fi
  echo "== (s) torch $model $*, $NGPUS GPU(s)"
  timeout 300 torchrun --standalone --nproc_per_node "$NGPUS" bench/gpu/torch_real_step.py \
    "${torch_model[@]}" --batch "$per_gpu" --steps "$STEPS" --csv "$OUT/torch_real_step.csv" \
    "$@" 2>&1 | torch_quiet
}

for model in $MODELS; do
  model_setup "$model" || exit 2
  global=$((per_gpu * NGPUS))
  # Without communication: every worker alone (under ctp launch, so the
  # same processes and GPUs as the runs with communication).
  alone=(--mode none --rank 0 --world-size 1 --batch "$per_gpu")
  ctp_step "$model" no_sync launch "${alone[@]}"
  torch_step "$model" --no-ddp
  if [ "$NGPUS" -gt 1 ]; then
    ctp_step "$model" grad_allreduce launch --mode grad_allreduce --batch "$global"
    ctp_step "$model" grad_allreduce_bucket25 launch --mode grad_allreduce --bucket-mb 25 \
      --batch "$global"
    torch_step "$model"
  fi
  ctp_step "$model" no_sync_again launch "${alone[@]}"
  torch_step "$model" --no-ddp
done
echo "== (s) summary: each side's sync overhead"
python3 bench/gpu/step_sync_summary.py "$OUT"
