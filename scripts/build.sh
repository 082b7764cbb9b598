#!/usr/bin/env bash
# Configures and builds ctp into ./build (CTP_WERROR=ON turns warnings into errors).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCTP_WERROR="${CTP_WERROR:-OFF}" ${CTP_CMAKE_ARGS:-}
cmake --build build -j "$(nproc)"
