#!/usr/bin/env bash
# Data parallel over a slow network, measured: two test hosts (scripts/test_hosts.sh: network
# namespaces on a bridge), their links limited with tc (tbf) to each RATE in turn, and at each
# rate (1) allreduce_bench across the hosts and (2) a short 2-rank bench run with the all-reduce
# overlapped and after backward. Prints a markdown table that sets the measured all-reduce and
# the exposed communication beside the ring model, t(n) = 2(n-1)/n x S / B + 2(n-1) x alpha,
# with B the rate and alpha from the unlimited link, for 2, 8 and 64 ranks.
# Usage: scripts/host_net_bench.sh OUT_DIR [RATE...]   (default: none 10gbit 1gbit 100mbit;
#        "none" = no limit). Needs root (namespaces); runs one thing at a time, about 4 minutes.
# BENCH_ARGS overrides the model (default: 2 layers at the reference width, batch 4 per rank).
# Example: scripts/host_net_bench.sh runs/net 1gbit 100mbit
source "$(dirname "$0")/usage.sh"
tb_start "$0" "[RATE...]" "$@"
shift  # OUT_DIR, now $out
rates=("$@")
[ ${#rates[@]} -gt 0 ] || rates=(none 10gbit 1gbit 100mbit)
for r in "${rates[@]}"; do
  [[ "$r" =~ ^(none|[0-9]+(k|m|g)bit)$ ]] ||
    { echo "host_net_bench.sh: RATE '$r': use none or a number with kbit|mbit|gbit" >&2; exit 2; }
done
[ -e "$out" ] && { echo "host_net_bench.sh: OUT_DIR '$out' exists; pick a new one" >&2; exit 2; }
BENCH=${BENCH:-./build/bench}
ALLREDUCE=${ALLREDUCE:-./build/allreduce_bench}
hosts="bash scripts/test_hosts.sh"
$hosts check
prefix="tbh-nb$(($$ % 10000))"
trap '$hosts down $prefix' EXIT
trap 'exit 130' INT TERM
$hosts up "$prefix" 2
mkdir -p "$out"
# shellcheck disable=SC2206
model=(${BENCH_ARGS:---num_layer 2 --batch_size 4})
common=(--threads 1 --steps 10 --warmup_steps 3 --eval_every 0 --eval_batches 1 --log_every 1
        --dist_timeout 120 "${model[@]}")

# both_ranks OUT_LOG CMD...: rank 1 on host 1 in the background, rank 0 on host 0.
both_ranks() {
  local log=$1; shift
  local envs=(WORLD_SIZE=2 MASTER_ADDR=10.77.0.1 MASTER_PORT=29500 GLOO_SOCKET_IFNAME=eth0)
  $hosts exec "$prefix" 1 env RANK=1 "${envs[@]}" "$@" > "$log.1" 2>&1 &
  local p1=$! rc=0
  $hosts exec "$prefix" 0 env RANK=0 "${envs[@]}" "$@" > "$log" 2>&1 || rc=$?
  wait $p1 || rc=$?
  [ $rc -eq 0 ] || { echo "host_net_bench.sh: failed, see $log and $log.1" >&2; tail -3 "$log" >&2; exit 1; }
}

"$BENCH" "${common[@]}" --save_dir "$out/one" > "$out/one.log"
for r in "${rates[@]}"; do
  echo "host_net_bench.sh: rate $r" >&2
  $hosts rate "$prefix" "$r"
  both_ranks "$out/allreduce_$r.log" "$ALLREDUCE" --max_mb 16 --seconds 1
  both_ranks "$out/bench_${r}_overlap.log" "$BENCH" "${common[@]}" --save_dir "$out/ov_$r"
  both_ranks "$out/bench_${r}_after.log" "$BENCH" "${common[@]}" --dist_overlap 0 \
    --save_dir "$out/seq_$r"
done
"${PYTHON:-.venv/bin/python}" scripts/host_net_table.py "$out" "${rates[@]}"
