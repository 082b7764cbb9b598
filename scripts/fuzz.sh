#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer into build-asan (scripts/sanitize.sh build-asan:
# the sanitized test build, which shares the library), then runs each for
# SECONDS (default 60), starting from its checked-in seed corpus
# (fuzz/corpus/TARGET), CTP_FUZZ_JOBS targets at a time (default: nproc).
#   scripts/fuzz.sh [SECONDS] [TARGET...]      (default: every target)
# New inputs the fuzzer finds go to build-asan/fuzz-work/TARGET/corpus (the
# checked-in seeds are only read); a crash, leak, timeout (CTP_FUZZ_TIMEOUT
# seconds per input, default 10; wall-clock, so raise it on a loaded machine),
# out-of-memory (2 GB) or sanitizer report is saved as build-asan/fuzz-work/
# TARGET/crash-*, leak-*, timeout-* or oom-* and makes the script exit 1. Ends
# with one line per target: seconds, executions, outcome.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(fuzz_proto_loader fuzz_proto_vs_libprotobuf fuzz_json_loader fuzz_verify fuzz_npy
           fuzz_transpile_grad_allreduce
           fuzz_transpile_local_sgd fuzz_transpile_single_process_multi_thread
           fuzz_transpile_multi_thread)
fi
build=build-asan
bash scripts/sanitize.sh build-asan "${targets[@]}"

export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

fuzz_one() {  # TARGET: runs it; its outcome goes to WORK/outcome
  local t="$1" work="$build/fuzz-work/$1"
  mkdir -p "$work/corpus"
  rm -f "$work/outcome"
  local status=ok
  # -rss_limit_mb also caps single allocations (malloc_limit_mb defaults to it).
  "$build/fuzz/$t" -max_total_time="$seconds" -timeout="${CTP_FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" "fuzz/corpus/$t" \
      >"$work/log" 2>&1 || status="FAILED (see $work/log)"
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)
  printf '%-45s %6s s %12s execs  %s\n' "$t" "$seconds" "${execs:-?}" "$status" >"$work/outcome"
}

jobs="${CTP_FUZZ_JOBS:-$(nproc)}"
running=0
for t in "${targets[@]}"; do
  echo "== $t: ${seconds} s"
  fuzz_one "$t" &
  running=$((running + 1))
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

failed=0
echo "== fuzz summary"
for t in "${targets[@]}"; do
  outcome="$build/fuzz-work/$t/outcome"
  if [[ ! -f "$outcome" ]]; then
    echo "$t: no outcome"
    failed=1
  elif ! grep -q " ok$" "$outcome"; then
    failed=1
    tail -n 60 "$build/fuzz-work/$t/log"
  fi
done
for t in "${targets[@]}"; do
  [[ -f "$build/fuzz-work/$t/outcome" ]] && cat "$build/fuzz-work/$t/outcome"
done
exit "$failed"
