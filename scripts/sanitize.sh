#!/usr/bin/env bash
# Builds ctp with clang and sanitizers and runs tests (CTP_WERROR=ON: warnings
# are errors; CTP_SANITIZE_JOBS: build parallelism, default nproc):
#   scripts/sanitize.sh asan [REGEX]   AddressSanitizer + UndefinedBehaviorSanitizer
#                                      into build-asan: every target (CUDA code too
#                                      when the toolkit is found, compiled by nvcc,
#                                      uninstrumented), then every test, or those
#                                      matching REGEX.
#   scripts/sanitize.sh tsan           ThreadSanitizer into build-tsan: the tests of
#                                      code that runs on several threads of one
#                                      process (ctp_thread_tests, tests/CMakeLists.txt).
#   scripts/sanitize.sh [all]          both.
#   scripts/sanitize.sh build-asan TARGET...
#                                      only configures build-asan and builds the
#                                      targets (scripts/fuzz.sh: the fuzz targets).
# build-asan also has coverage instrumentation (CTP_FUZZ) so that the fuzz
# targets share the library's objects with the tests: one compile for both.
# Any sanitizer finding aborts its process, so the test that triggered it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${CTP_SANITIZE_JOBS:-$(nproc)}"
what="${1:-all}"

ensure_clang() {
  if ! command -v clang++ >/dev/null ||
     [[ ! -f "$(clang++ -print-file-name=libclang_rt.fuzzer-x86_64.a)" ]]; then
    bash scripts/install_deps.sh --sanitizers
  fi
}

configure() {  # DIR SANITIZERS FUZZ(ON|OFF) EXTRA_CMAKE_ARGS...
  local dir="$1" sanitizers="$2" fuzz="$3"
  shift 3
  ensure_clang
  # -O1 keeps sanitized code quick to build and to run; line tables are all a
  # stack trace needs; _GLIBCXX_ASSERTIONS bounds-checks the standard
  # containers' operator[] and the like.
  local flags="-O1 -gline-tables-only -D_GLIBCXX_ASSERTIONS"
  cmake -S . -B "$dir" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="$flags" -DCMAKE_C_FLAGS_DEBUG="$flags" \
    -DCTP_SANITIZE="$sanitizers" -DCTP_FUZZ="$fuzz" ${CTP_WERROR:+-DCTP_WERROR=$CTP_WERROR} "$@" \
    >/dev/null
}

configure_asan() { configure build-asan "address,undefined" ON; }

export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

run_asan() {  # [REGEX]
  configure_asan
  cmake --build build-asan -j "$jobs"
  echo "== ASan+UBSan: ctest ${1:+-R '$1'}"
  ( cd build-asan &&
    ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
      ctest --output-on-failure -j "$jobs" --timeout 900 ${1:+-R "$1"} )
}

run_tsan() {
  # No CUDA: the GPU code's threads are NCCL's and the driver's, which TSan
  # cannot see into.
  configure build-tsan thread OFF -DCTP_WITH_CUDA=OFF -DCTP_BUILD_BENCH=OFF
  cmake --build build-tsan -j "$jobs" --target ctp_thread_tests
  echo "== TSan: ctest -L tsan (the multi-threaded tests)"
  ( cd build-tsan &&
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/../tests/tsan_suppressions.txt${TSAN_OPTIONS:+:$TSAN_OPTIONS}" \
      ctest --output-on-failure -j "$jobs" --timeout 900 -L tsan )
}

case "$what" in
  asan) run_asan "${2:-}" ;;
  tsan) run_tsan ;;
  all) run_asan && run_tsan ;;
  build-asan) shift; configure_asan; cmake --build build-asan -j "$jobs" --target "$@" ;;
  *) echo "usage: scripts/sanitize.sh [asan [REGEX]|tsan|all|build-asan TARGET...]" >&2; exit 2 ;;
esac
