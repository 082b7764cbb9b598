#!/usr/bin/env bash
# The main job: installs what ctp needs, builds it, then transpiles the sample
# MLP program (GradAllReduce) and trains it on 2 workers started by
# `ctp launch`: on NCCL when two GPUs are present, else on Gloo over loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
CTP_CMAKE_ARGS="-DCTP_BUILD_TESTS=OFF -DCTP_BUILD_BENCH=OFF ${CTP_CMAKE_ARGS:-}" bash scripts/build.sh
# NCCL on GPUs 0 and 1 when the machine has two and the build has its CUDA/NCCL
# library ("nccl (loaded on demand)"; "nccl (missing: ...)" does not count),
# else Gloo over loopback on CPU workers.
device=cpu
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [[ "${gpus:-0}" -ge 2 ]] && build/ctp --version | grep -q 'nccl (loaded on demand)'; then
  device=gpu
fi
echo "ctp: training the sample on 2 workers ($device)"
exec build/ctp launch --nproc 2 -- build/samples/ctp_sample_trainer --mode grad_allreduce \
  --device "$device" "$@"
