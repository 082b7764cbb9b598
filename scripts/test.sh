#!/usr/bin/env bash
# The test command (CI's .ci/run): installs what ctp needs, then
#  1. builds everything (library, tool, samples, benchmarks, CUDA code when the
#     toolkit is present, fuzz targets) with clang, AddressSanitizer and
#     UndefinedBehaviorSanitizer, warnings as errors, and runs every test;
#  2. runs each libFuzzer target for CTP_CI_FUZZ_SECONDS (default 10) from its
#     checked-in corpus;
#  3. builds the multi-threaded tests with ThreadSanitizer and runs them.
# GPU tests skip themselves, visibly, without a GPU. Any sanitizer report,
# fuzzer finding or failing test fails the command.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh --sanitizers
start=$SECONDS
CTP_WERROR=ON bash scripts/sanitize.sh asan
echo "ctp: ASan+UBSan stage took $((SECONDS - start)) s"; start=$SECONDS
bash scripts/fuzz.sh "${CTP_CI_FUZZ_SECONDS:-10}"
echo "ctp: fuzz stage took $((SECONDS - start)) s"; start=$SECONDS
CTP_WERROR=ON bash scripts/sanitize.sh tsan
echo "ctp: TSan stage took $((SECONDS - start)) s"
