#!/usr/bin/env bash
# Installs what trainbench needs to build, test and run its peers, on Debian 12 with the CUDA 13.0
# toolkit: Debian's build packages, then the project's virtual environment .venv (git-ignored)
# with the pinned Python packages of scripts/requirements.txt (torch 2.11 = LibTorch for bench).
# Idempotent: installs only what is missing and prints nothing when all is present.
# On a fresh machine the two run side by side; the venv step downloads about 3 GB (torch + its
# nvidia-* CUDA wheels) and takes 5.4 GB on disk; measured: 74-125 s without a pip cache on the
# project's machines (docs/BENCHMARKS.md).
# PYTHON=... picks the interpreter for the venv (default: python3; Python 3.11 or 3.12).
# Example: PYTHON=python3.11 bash scripts/install_deps.sh
source "$(dirname "$0")/usage.sh"
tb_help "$0" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  g++ cmake ninja-build pkg-config
  libcxxopts-dev libspdlog-dev nlohmann-json3-dev
  libgtest-dev libbenchmark-dev  # GoogleTest; Google Benchmark for benchmarks/kernel_bench.cpp
  libgloo-dev             # Gloo declarations for c10d's ProcessGroupGloo.hpp (see cmake/torch.cmake)
  zlib1g-dev              # inflate for reading enwik9.zip directly
  protobuf-compiler libprotobuf-dev  # TensorBoard's event records (proto/), compiled by protoc
  zip                     # tests build zip archives with it
  iproute2                # ip and tc: the DistHosts tests' namespace hosts (scripts/test_hosts.sh)
  python3 python3-venv python3-dev  # python3-dev: torch.compile builds C++ against Python.h
)

# Debian's packages and the pinned wheels do not need each other: on a fresh machine the two
# downloads run side by side (the venv needs only an interpreter with venv and ensurepip; where
# the interpreter lacks them, python3-venv comes first).
install_debian_() {
  local missing=() p
  for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  echo "install_deps: installing Debian packages: ${missing[*]}" >&2
  local sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq >/dev/null
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The virtual environment: rebuilt from requirements.txt whenever that file changes (a stamp
# holds the hash of the file it was installed from).
venv=.venv
req=scripts/requirements.txt
want=$(sha256sum "$req" | cut -d' ' -f1)
python=${PYTHON:-python3}
venv_ready_() { [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.installed" 2>/dev/null)" = "$want" ]; }
install_venv_() {
  if ! "$python" -c 'import sys; sys.exit(0 if sys.version_info[:2] in ((3, 11), (3, 12)) else 1)'
  then
    echo "install_deps: $python is Python $("$python" -V 2>&1); the pinned packages need 3.11 or" \
         "3.12: set PYTHON=python3.11" >&2
    return 1
  fi
  echo "install_deps: installing $(grep -c '^[a-z]' "$req") pinned Python packages into $venv" \
       "(torch 2.11 with its CUDA 13.0 wheels: about 3 GB to download, 5.4 GB on disk)" >&2
  local start
  start=$(date +%s)
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
  echo "$want" > "$venv/.installed"
  echo "install_deps: $venv ready in $(( $(date +%s) - start )) s ($(du -sh "$venv" | cut -f1))" >&2
}

if venv_ready_; then
  install_debian_
elif "$python" -c 'import venv, ensurepip' 2>/dev/null; then
  # Both in the background, so that errexit holds inside each (it does not on the left of ||).
  install_debian_ &
  debian_pid=$!
  install_venv_ &
  venv_pid=$!
  venv_status=0
  wait "$venv_pid" || venv_status=$?
  debian_status=0
  wait "$debian_pid" || debian_status=$?
  if [ "$debian_status" -ne 0 ]; then
    echo "install_deps: the Debian packages failed to install (apt-get exit $debian_status)" >&2
    exit "$debian_status"
  fi
  exit "$venv_status"
else
  install_debian_
  install_venv_
fi
