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
code=0
if command -v curl >/dev/null; then
  curl -fsSL --retry 2 --connect-timeout 20 -o data/enwik9.zip.part "$url" 2>data/enwik9.err || code=$?
else
  wget -q -T 20 -O data/enwik9.zip.part "$url" 2>data/enwik9.err || code=$?
fi
if [ "$code" -ne 0 ]; then
  rm -f data/enwik9.zip.part
  why=$(tail -n 1 data/enwik9.err 2>/dev/null)
  rm -f data/enwik9.err
  echo "get_enwik9.sh: cannot download $url (${why:-exit $code}); bench runs without it on its" \
    "embedded corpus (no --data), or give --data a copy of enwik9 or enwik9.zip from elsewhere" >&2
  exit 1
fi
rm -f data/enwik9.err
mv data/enwik9.zip.part data/enwik9.zip
echo "saved data/enwik9.zip; run: ./build/bench --data data/enwik9.zip"
