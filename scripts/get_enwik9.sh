#!/usr/bin/env bash
# Fetches enwik9.zip (the reference data, 1,000,000,000 bytes unpacked) into data/ for users
# with internet access. bench reads the .zip directly: --data data/enwik9.zip
# Example: bash scripts/get_enwik9.sh && ./build/bench --data data/enwik9.zip
source "$(dirname "$0")/usage.sh"
tb_help "$0" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p data
url=${ENWIK9_URL:-http://mattmahoney.net/dc/enwik9.zip}
if [ -s data/enwik9.zip ]; then echo "data/enwik9.zip is already there"; exit 0; fi
if command -v curl >/dev/null; then
  curl -fL --retry 3 -o data/enwik9.zip.part "$url"
else
  wget -O data/enwik9.zip.part "$url"
fi
mv data/enwik9.zip.part data/enwik9.zip
echo "saved data/enwik9.zip; run: ./build/bench --data data/enwik9.zip"
