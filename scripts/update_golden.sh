#!/usr/bin/env bash
# Regenerates the golden transpiler cases: their inputs (tests/golden/generate_cases.py),
# the expected op sequences from ctp's own transpile (the Golden tests with
# CTP_UPDATE_GOLDEN=1), then checks every expected file against the reference
# collective.py (scripts/golden_reference_check.py). Review the diff before committing.
#
#   scripts/update_golden.sh [BUILD_DIR]        (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
python="$(command -v python3.11 || command -v python3)"
"$python" tests/golden/generate_cases.py
cmake -S . -B "$build" > /dev/null
cmake --build "$build" -j2 --target ctp_tests
CTP_UPDATE_GOLDEN=1 "$build/tests/ctp_tests" --gtest_filter='Cases/Golden.*' --gtest_brief=1
"$build/tests/ctp_tests" --gtest_filter='*Golden*' --gtest_brief=1
"$python" scripts/golden_reference_check.py
