#!/usr/bin/env bash
# Starts N processes of a command on this machine with torchrun's environment (RANK, WORLD_SIZE,
# LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), for machines without torchrun:
#   scripts/launch.sh [--port P] [--addr A] N build/bench --num_layer 2 ...
# SIGINT/SIGTERM are passed on to every rank (a shell ignores SIGINT in background jobs, so
# stop a backgrounded launch with SIGTERM; Ctrl-C in a terminal reaches every rank directly). Exit status: rank 0's if it failed, else the first
# failing rank's, else 0.
set -uo pipefail

usage() {
  echo "usage: scripts/launch.sh [--port P] [--addr A] N COMMAND [ARGS...]  (N >= 1 processes)" >&2
  exit 2
}
port="${MASTER_PORT:-29500}"
addr="${MASTER_ADDR:-127.0.0.1}"
while [ $# -gt 0 ]; do
  case "$1" in
    --port) [ $# -ge 2 ] || usage; port="$2"; shift 2 ;;
    --addr) [ $# -ge 2 ] || usage; addr="$2"; shift 2 ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || usage
n="$1"
shift
if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ]; then
  echo "launch.sh: N: '$n' is not allowed; use an integer >= 1" >&2
  exit 2
fi
if ! [[ "$port" =~ ^[0-9]+$ ]] || [ "$port" -lt 1 ] || [ "$port" -gt 65535 ]; then
  echo "launch.sh: --port: '$port' is not allowed; use a TCP port in [1, 65535]" >&2
  exit 2
fi

pids=()
forward() {
  for p in "${pids[@]}"; do kill -s "$1" "$p" 2>/dev/null; done
}
trap 'forward INT' INT
trap 'forward TERM' TERM
for ((r = 0; r < n; r++)); do
  RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n MASTER_ADDR=$addr MASTER_PORT=$port \
    "$@" &
  pids+=($!)
done

rcs=()
for ((r = 0; r < n; r++)); do
  # wait returns early when a forwarded signal interrupts it; wait again for the real status.
  while true; do
    wait "${pids[$r]}"
    rc=$?
    kill -0 "${pids[$r]}" 2>/dev/null || break
  done
  rcs+=("$rc")
done
for rc in "${rcs[@]}"; do
  if [ "$rc" -ne 0 ]; then exit "$rc"; fi  # rank 0's first, then in rank order
done
exit 0
