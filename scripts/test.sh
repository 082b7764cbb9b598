#!/usr/bin/env bash
# The test command (CI's .ci/run): installs what ctp needs, then
#  1. builds everything (library, tool, samples, benchmarks, CUDA code when the
#     toolkit is present, fuzz targets) with clang, AddressSanitizer and
#     UndefinedBehaviorSanitizer, warnings as errors, and runs every test;
#  2. runs each libFuzzer target for CTP_CI_FUZZ_SECONDS (default 10) from its
#     checked-in corpus;
#  3. builds the multi-threaded tests with ThreadSanitizer and runs them;
#  4. builds the Python package without sanitizers (the interpreter is not
#     instrumented: see tests/CMakeLists.txt) for /usr/bin/python3, Debian's,
#     where apt puts NumPy and pytest, and runs its pytest tests. This stage
#     builds with the system compiler (g++), the one scripts/main.sh uses, so
#     that CI also compiles the main job's build (clang accepted code g++
#     refused once, and only scripts/main.sh saw it).
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
echo "ctp: TSan stage took $((SECONDS - start)) s"; start=$SECONDS
python=/usr/bin/python3
cmake -S . -B build-python \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DCTP_WERROR=ON \
  -DCTP_WITH_PYTHON=ON -DPython3_EXECUTABLE="$python" -DCTP_WITH_CUDA=OFF -DCTP_BUILD_BENCH=OFF \
  ${CTP_CMAKE_ARGS:-}
# Every installed target (python/tests/test_install.py installs the build).
cmake --build build-python -j "$(nproc)" --target ctp_python ctp_cli ctp_sample_trainer \
  ctp_sample_models
( cd build-python && ctest -L python --output-on-failure --timeout 900 )
echo "ctp: Python stage took $((SECONDS - start)) s"
