#!/usr/bin/env bash
# The test command: installs what ctp needs, builds everything with warnings
# as errors, and runs every test (GPU tests skip themselves without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
CTP_WERROR=ON bash scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)" --timeout 600
