#!/usr/bin/env bash
# Starts N processes of a command on this machine with torchrun's environment (RANK, WORLD_SIZE,
# LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), for machines without torchrun:
#   scripts/launch.sh [--port P] [--addr A] N build/bench --num_layer 2 ...
# Ctrl-C in a terminal reaches every rank directly (the ranks keep SIGINT, which a shell would
# otherwise ignore in background jobs); SIGTERM sent to this script is passed on to every rank. Exit status: rank 0's if it failed, else the first
# failing rank's, else 0.
# Example: scripts/launch.sh 2 ./build/bench --preset quick --threads 1
source "$(dirname "$0")/usage.sh"
tb_help "$0" "$@"
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
  for p in ${pids[@]+"${pids[@]}"}; do kill -s "$1" "$p" 2>/dev/null; done
}
# The terminal already delivered Ctrl-C to every rank: a second SIGINT would make them exit
# at once, without their results.
trap ':' INT
trap 'forward TERM' TERM
for ((r = 0; r < n; r++)); do
  (
    trap - INT
    RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n MASTER_ADDR=$addr \
      MASTER_PORT=$port exec "$@"
  ) &
  pids+=($!)
done

rcs=()
for ((r = 0; r < n; r++)); do
  # A trapped signal cuts wait short (status 128+sig): wait again while the rank lives, and once
  # more for the status of a rank that ended in between (127: already collected).
  wait "${pids[$r]}"
  rc=$?
  while kill -0 "${pids[$r]}" 2>/dev/null; do
    wait "${pids[$r]}"
    rc=$?
  done
  wait "${pids[$r]}" 2>/dev/null
  again=$?
  [ "$again" -ne 127 ] && rc=$again
  rcs+=("$rc")
done
for rc in "${rcs[@]}"; do
  if [ "$rc" -ne 0 ]; then exit "$rc"; fi  # rank 0's first, then in rank order
done
exit 0
