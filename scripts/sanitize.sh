#!/usr/bin/env bash
# Builds ctp with sanitizers (clang, CUDA and benchmarks off) and runs tests:
#   scripts/sanitize.sh asan   AddressSanitizer + UndefinedBehaviorSanitizer into
#                              build-asan; the whole ctest suite.
#   scripts/sanitize.sh tsan   ThreadSanitizer into build-tsan; the multi-threaded
#                              tests (TSAN_TESTS below: thread groups, Gloo and
#                              rendezvous over loopback, the schedule check, the
#                              transpile CLI's parallel writers).
#   scripts/sanitize.sh        both.
# Any sanitizer finding aborts its process, so the test that triggered it fails.
# CTP_SANITIZE_JOBS sets the build parallelism (default: nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${CTP_SANITIZE_JOBS:-$(nproc)}"
what="${1:-all}"

# Left out of the sanitized runs: install_consumer builds a separate project
# against the installed library with the system compiler (no sanitizer
# runtime to link), and golden_reference_check runs only Python.
NOT_SANITIZED='^(install_consumer|golden_reference_check)$'
# The tests whose code runs on several threads of one process. Launch tests
# are left out: they run whole `ctp launch` jobs, processes rather than threads.
TSAN_TESTS='(^|/)(CommThreadGroup|CommSchedule|CommGloo|GlooRanks|Rendezvous|RendezvousStore|TranspilerCli)\.'

configure_and_build() {  # DIR SANITIZERS
  # -O1 keeps sanitized code quick to build and to run; _GLIBCXX_ASSERTIONS
  # bounds-checks the standard containers' operator[] and the like.
  cmake -S . -B "$1" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="-O1 -D_GLIBCXX_ASSERTIONS" \
    -DCTP_SANITIZE="$2" -DCTP_WITH_CUDA=OFF -DCTP_BUILD_BENCH=OFF >/dev/null
  cmake --build "$1" -j "$jobs" --target ctp_tests
}

export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

if [[ "$what" == asan || "$what" == all ]]; then
  configure_and_build build-asan "address,undefined"
  echo "== ASan+UBSan: the whole ctest suite (but $NOT_SANITIZED)"
  ( cd build-asan &&
    ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
      ctest --output-on-failure -j "$jobs" --timeout 900 -E "$NOT_SANITIZED" )
fi
if [[ "$what" == tsan || "$what" == all ]]; then
  configure_and_build build-tsan "thread"
  echo "== TSan: the multi-threaded tests"
  ( cd build-tsan &&
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}" \
      ctest --output-on-failure -j "$jobs" --timeout 900 -R "$TSAN_TESTS" )
fi
if [[ "$what" != asan && "$what" != tsan && "$what" != all ]]; then
  echo "usage: scripts/sanitize.sh [asan|tsan|all]" >&2
  exit 2
fi
