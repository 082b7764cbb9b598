#!/usr/bin/env bash
# Times a real inference model of ../shared/realworld forward on one GPU with
# `ctp run`, beside PyTorch's torchvision ResNet-50 in eval mode in the same
# call (issue 17: "a ResNet-50 inference model from ../shared/realworld runs
# forward on one GPU, time per batch recorded").
#
#   bench/gpu/realworld_forward.sh BUILD_DIR MODEL OUT_DIR [BATCH] [STEPS]
#
# The model carries no parameter values: `ctp run --random-params` gives them
# seeded uniform values. The image is written once as .npy and bound at
# every step. Reported: wall time per step from the difference of a 1-step and
# a (1 + STEPS)-step run (includes binding the image from the host), and the
# device time per step of `--profile` (compute stream, first step not
# counted), then the peer's median. PyTorch's model is plain FP32 ResNet-50;
# the Paddle-Lite model is ResNet-50 with batch norm folded into its
# convolutions and 188 simulated-quantization ops around them (FP32 values
# rounded to 8-bit levels), so the two do the same convolutions and ctp does
# more elementwise work.
set -euo pipefail
BUILD=$1 MODEL=$2 OUT=$3 BATCH=${4:-64} STEPS=${5:-20}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
"$PY" - "$OUT/image.npy" "$BATCH" <<'PYEOF'
import sys
import numpy as np
np.save(sys.argv[1], np.random.default_rng(0).standard_normal(
    (int(sys.argv[2]), 3, 224, 224), dtype=np.float32))
PYEOF
run() {
  "$BUILD/ctp" run --device gpu --random-params --main "$MODEL" \
    --feed image="$OUT/image.npy" --batch "$BATCH" "$@"
}
calc() { "$PY" -c "print(round($1, 3))"; }
# Seconds of a run of N steps (its log: OUT/run_N.log).
seconds() {
  local t0 t1
  t0=$(date +%s.%N)
  run --steps "$1" > "$OUT/run_$1.log" 2>&1
  t1=$(date +%s.%N)
  calc "$t1 - $t0"
}
one=$(seconds 1)
many=$(seconds $((STEPS + 1)))
echo "== ctp $(basename "$MODEL"), batch $BATCH: 1 step $one s, $((STEPS + 1)) steps $many s," \
  "$(calc "($many - $one) * 1000 / $STEPS") ms per step (wall)"
tail -2 "$OUT/run_1.log"
run --steps $((STEPS + 1)) --profile > "$OUT/profile.log" 2>&1
tail -25 "$OUT/profile.log"
echo "== peer: torchvision resnet50, eval mode, FP32, batch $BATCH"
"$PY" bench/gpu/torch_resnet_forward.py --eval --batch "$BATCH" --steps "$STEPS"
