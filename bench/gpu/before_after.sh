#!/usr/bin/env bash
# A change measured beside its base in one device call: builds BEFORE_TREE
# (e.g. main's head, the root of the device's working tree) and runs
# real_models_run.sh WHAT_BEFORE on it; then lays this tree's files over the
# same source copy (only the files whose content differs are rewritten, so the
# second build recompiles what the change touches) and runs WHAT_AFTER. Both
# use this tree's real_models_run.sh and the same build folder; logs go to
# OUT_DIR/before and OUT_DIR/after, and the last lines sum up both (the
# profiles' per-step totals and op types, PyTorch's medians, memory peaks).
# Environment as real_models_run.sh (NO_COMPILE, GPU_TESTS, ...), applied to
# both runs, plus BEFORE_ENV / AFTER_ENV ("NAME=VALUE ...", for one side only);
# WORK=DIR holds the source copy and build (default /tmp/before_after).
#
#   bash bench/gpu/before_after.sh OUT_DIR CLI11_PREFIX BEFORE_TREE WHAT_BEFORE WHAT_AFTER
set -u
OUT=${1:?OUT_DIR}
CLI11=${2:?CLI11_PREFIX}
BEFORE=${3:?BEFORE_TREE}
WHAT_BEFORE=${4:?WHAT_BEFORE}
WHAT_AFTER=${5:?WHAT_AFTER}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
W=${WORK:-/tmp/before_after}
SRC=$W/ctp
RUN=$HERE/bench/gpu/real_models_run.sh
mkdir -p "$SRC" "$OUT"

# Copies tree $1 over $SRC: new and changed files (by content; given the
# current time, so that the build sees them), and removes the files $1 lacks.
# Build output, .git and the device's carried folders are left out.
overlay() {
  python3 - "$1" "$SRC" <<'PY'
import filecmp, os, shutil, sys
src, dst = sys.argv[1:]
skip = {".git", "build", "carry", ".devdeps", "shared"}
def files(root):
    found = set()
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if not (d == root and x in skip)]
        found.update(os.path.relpath(os.path.join(d, n), root) for n in names)
    return found
have, want = files(dst), files(src)
for f in sorted(want):
    a, b = os.path.join(src, f), os.path.join(dst, f)
    if f not in have or not filecmp.cmp(a, b, shallow=False):
        os.makedirs(os.path.dirname(b), exist_ok=True)
        shutil.copyfile(a, b)
        print("overlay: changed", f)
for f in sorted(have - want):
    os.remove(os.path.join(dst, f))
    print("overlay: removed", f)
PY
}

overlay "$BEFORE" > "$OUT/overlay.log"
(cd "$SRC" && env ${BEFORE_ENV:-} BUILD=$W/build bash "$RUN" "$OUT/before" "$CLI11" "$WHAT_BEFORE")
overlay "$HERE" >> "$OUT/overlay.log"
grep -c "overlay:" "$OUT/overlay.log"
(cd "$SRC" && env ${AFTER_ENV:-} BUILD=$W/build bash "$RUN" "$OUT/after" "$CLI11" "$WHAT_AFTER")
for side in before after; do
  echo "== $side"
  grep -E "^profile:|^by op type|^peak tensor memory|^torch |^= rc|tests? (passed|failed)|FAILED|PASSED" \
    "$OUT/$side/run.log" | cut -c1-600
done
