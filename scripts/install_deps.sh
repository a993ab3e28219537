#!/usr/bin/env bash
# Installs the Debian 12 packages trainbench needs to build, test and run its demo.
# Idempotent: installs only what is missing and prints nothing when all is present.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config
  libtorch-dev            # LibTorch 1.13 (CPU)
  libopenblas0-pthread    # fast BLAS; without it torch falls back to reference BLAS
  libcxxopts-dev libspdlog-dev nlohmann-json3-dev
  libgtest-dev
  libgloo-dev             # Gloo headers for the c10d process group (multi-process runs)
  zlib1g-dev              # inflate for reading enwik9.zip directly
  zip                     # tests build zip archives with it
  python3
  python3-torch           # Python side of the tests and the PyTorch peer
  python3-matplotlib      # scripts/plot_runs.py
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install_deps: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq >/dev/null
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
