#!/usr/bin/env bash
# Installs the Debian packages ctp builds against, skipping those already present
# (the Python ones are for Debian's /usr/bin/python3, which the build uses: docs/python.md).
#   scripts/install_deps.sh               what the library, tool, tests and benchmarks need
#   scripts/install_deps.sh --sanitizers  and clang with its sanitizer and libFuzzer
#                                         runtimes (scripts/sanitize.sh, scripts/fuzz.sh)
set -euo pipefail
packages=(libprotobuf-dev protobuf-compiler libfmt-dev nlohmann-json3-dev libgtest-dev
          libgmock-dev libcli11-dev libgloo-dev libbenchmark-dev
          libopenblas-dev libopenblas-pthread-dev
          python3-dev pybind11-dev python3-numpy python3-pytest ccache)
if [[ "${1:-}" == --sanitizers ]]; then
  packages+=(clang libclang-rt-14-dev)
elif [[ -n "${1:-}" ]]; then
  echo "usage: scripts/install_deps.sh [--sanitizers]" >&2
  exit 2
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "ctp: installing ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
