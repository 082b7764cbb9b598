#!/usr/bin/env bash
# The main job: installs what ctp needs, builds it, then transpiles the sample
# MLP program (GradAllReduce) and trains it on 2 workers started by
# `ctp launch`, on Gloo over loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
CTP_CMAKE_ARGS="-DCTP_BUILD_TESTS=OFF -DCTP_BUILD_BENCH=OFF ${CTP_CMAKE_ARGS:-}" bash scripts/build.sh
# The sample trainer runs on CPU workers (Gloo over loopback) for now: its GPU
# path (DeviceContext per worker) is not wired yet, see docs/gpu.md.
device=cpu
echo "ctp: training the sample on 2 workers ($device)"
exec build/ctp launch --nproc 2 -- build/samples/ctp_sample_trainer --mode grad_allreduce \
  --device "$device" "$@"
