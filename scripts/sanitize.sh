#!/usr/bin/env bash
# Builds ctp with clang and sanitizers (CUDA and benchmarks off) and runs tests:
#   scripts/sanitize.sh asan [REGEX]   AddressSanitizer + UndefinedBehaviorSanitizer
#                                      into build-asan; the whole ctest suite (or the
#                                      tests matching REGEX), but NOT_SANITIZED below.
#   scripts/sanitize.sh tsan           ThreadSanitizer into build-tsan; the
#                                      multi-threaded tests (TSAN_TESTS below).
#   scripts/sanitize.sh [all]          both.
#   scripts/sanitize.sh build-asan TARGET...
#                                      only configures build-asan and builds the
#                                      targets (scripts/fuzz.sh builds its fuzz
#                                      targets so, sharing the library's objects).
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
# The tests whose code runs on several threads of one process: thread groups,
# Gloo and the rendezvous over loopback (including killed, stalled and absent
# peers), the cross-rank schedule check, and the transpile CLI's parallel
# writers. Launch tests are left out: they run `ctp launch` jobs, whose
# workers are processes, not threads.
TSAN_TESTS='(^|/)(CommThreadGroup|CommSchedule|CommGloo|GlooRanks|Rendezvous|RendezvousStore|TranspilerCli)\.'

# clang and its sanitizer and libFuzzer runtimes (Debian: clang, libclang-rt-dev).
ensure_clang() {
  if command -v clang++ >/dev/null &&
     [[ -f "$(clang++ -print-file-name=libclang_rt.fuzzer-x86_64.a)" ]]; then
    return
  fi
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "ctp: installing clang and libclang-rt-dev"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends \
    clang libclang-rt-dev
}

configure_and_build() {  # DIR SANITIZERS FUZZ(ON|OFF) TARGET...
  local dir="$1" sanitizers="$2" fuzz="$3"
  shift 3
  ensure_clang
  # -O1 keeps sanitized code quick to build and to run; line tables are all a
  # stack trace needs; _GLIBCXX_ASSERTIONS bounds-checks the standard
  # containers' operator[] and the like.
  local flags="-O1 -gline-tables-only -D_GLIBCXX_ASSERTIONS"
  cmake -S . -B "$dir" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="$flags" -DCMAKE_C_FLAGS_DEBUG="$flags" \
    -DCTP_SANITIZE="$sanitizers" -DCTP_FUZZ="$fuzz" -DCTP_WITH_CUDA=OFF -DCTP_BUILD_BENCH=OFF \
    >/dev/null
  cmake --build "$dir" -j "$jobs" --target "$@"
}

# build-asan also holds the fuzz targets (CTP_FUZZ: coverage instrumentation,
# which costs the tests little), so that CI compiles the library once for both.
build_asan() { configure_and_build build-asan "address,undefined" ON "$@"; }

export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

run_asan() {  # [REGEX]
  build_asan ctp_tests
  echo "== ASan+UBSan: ctest ${1:+-R '$1' }(all but $NOT_SANITIZED)"
  ( cd build-asan &&
    ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
      ctest --output-on-failure -j "$jobs" --timeout 900 -E "$NOT_SANITIZED" ${1:+-R "$1"} )
}

run_tsan() {
  configure_and_build build-tsan thread OFF ctp_tests
  echo "== TSan: the multi-threaded tests"
  ( cd build-tsan &&
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}" \
      ctest --output-on-failure -j "$jobs" --timeout 900 -R "$TSAN_TESTS" )
}

case "$what" in
  asan) run_asan "${2:-}" ;;
  tsan) run_tsan ;;
  all) run_asan && run_tsan ;;
  build-asan) shift; build_asan "$@" ;;
  *) echo "usage: scripts/sanitize.sh [asan [REGEX]|tsan|all|build-asan TARGET...]" >&2; exit 2 ;;
esac
