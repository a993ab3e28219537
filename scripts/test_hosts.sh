#!/usr/bin/env bash
# The project's own test network: N hosts, each a network namespace with one interface (eth0)
# cabled by a veth pair to a bridge in a "switch" namespace. Nothing is attached to this
# machine's own network namespace, so no packet of a test leaves the hosts it made.
#   test_hosts.sh check                  exit 0 when namespaces can be made here, else 1 and why
#   test_hosts.sh up PREFIX N [RATE]     N (1-9) hosts PREFIX-h0..PREFIX-h{N-1} at 10.77.0.1 .. N/24;
#                                        RATE (tc tbf, e.g. 1gbit) limits each host's egress
#   test_hosts.sh rate PREFIX RATE       change (or with "none" remove) the limit on every host
#   test_hosts.sh link PREFIX I up|down  take host I's cable out or put it back
#   test_hosts.sh addr I                 host I's address
#   test_hosts.sh exec PREFIX I CMD...   run CMD on host I
#   test_hosts.sh down PREFIX            remove the hosts and the switch (idempotent)
#   test_hosts.sh clean                  remove every namespace this script ever made (tbh-*)
# PREFIX is "tbh-" (what `clean` removes) then 1-6 letters or digits, e.g. tbh-ex.
# Example: scripts/test_hosts.sh up tbh-ex 2 1gbit && scripts/test_hosts.sh down tbh-ex
source "$(dirname "$0")/usage.sh"
tb_help "$0" "$@"
set -euo pipefail

die() { echo "test_hosts.sh: $*" >&2; exit 1; }
net=10.77.0
addr() { echo "$net.$(($1 + 1))"; }
check_prefix() {
  [[ "$1" =~ ^tbh-[a-zA-Z0-9]{1,6}$ ]] || die "PREFIX '$1': use tbh- and 1-6 letters or digits"
}

check() {
  command -v ip >/dev/null || die "no 'ip' command (install iproute2)"
  local probe="tbh-probe$$"
  if ! err=$(ip netns add "$probe" 2>&1); then
    echo "test_hosts.sh: network namespaces are refused here: $err" >&2
    return 1
  fi
  ip netns del "$probe"
}

down() {
  local p=$1 ns
  for ns in $(ip netns list | awk '{print $1}'); do
    case "$ns" in "$p"-h* | "$p"-sw) ip netns del "$ns" 2>/dev/null || true ;; esac
  done
}

set_rate() {  # set_rate NS RATE: a token bucket on eth0's egress, or none
  ip -n "$1" link set eth0 up
  tc -n "$1" qdisc del dev eth0 root 2>/dev/null || true
  [ "$2" = none ] && return 0
  # burst: at least 1 ms at the rate and 64 KiB, so TCP can fill the pipe.
  tc -n "$1" qdisc add dev eth0 root tbf rate "$2" burst 1mb latency 100ms ||
    die "tc refused the rate '$2' on $1"
}

up() {
  local p=$1 n=$2 rate=${3:-none} i
  [[ "$n" =~ ^[1-9]$ ]] || die "N '$n': use 1-9 hosts"
  down "$p"
  ip netns add "$p-sw"
  ip -n "$p-sw" link add br0 type bridge
  ip -n "$p-sw" link set br0 up
  for ((i = 0; i < n; i++)); do
    local host="$p-h$i"
    ip netns add "$host"
    ip -n "$host" link set lo up
    ip link add "${p#tbh-}h$i" netns "$host" type veth peer name "s$i" netns "$p-sw"
    ip -n "$host" link set "${p#tbh-}h$i" name eth0
    ip -n "$host" addr add "$(addr "$i")/24" dev eth0
    ip -n "$host" link set eth0 up
    ip -n "$p-sw" link set "s$i" master br0
    ip -n "$p-sw" link set "s$i" up
    set_rate "$host" "$rate"
  done
}

[ $# -ge 1 ] || die "usage: test_hosts.sh check | up PREFIX N [RATE] | rate PREFIX RATE | link PREFIX I up|down | addr I | exec PREFIX I CMD... | down PREFIX | clean"
cmd=$1; shift
case "$cmd" in
  check) check ;;
  up) [ $# -ge 2 ] || die "usage: up PREFIX N [RATE]"; check_prefix "$1"; up "$@" ;;
  rate)
    [ $# -eq 2 ] || die "usage: rate PREFIX RATE"; check_prefix "$1"
    for ns in $(ip netns list | awk '{print $1}' | grep -E "^$1-h[0-9]$"); do set_rate "$ns" "$2"; done ;;
  link)
    [ $# -eq 3 ] && [[ "$3" =~ ^(up|down)$ ]] || die "usage: link PREFIX I up|down"
    check_prefix "$1"; ip -n "$1-h$2" link set eth0 "$3" ;;
  addr) [ $# -eq 1 ] || die "usage: addr I"; addr "$1" ;;
  exec) [ $# -ge 3 ] || die "usage: exec PREFIX I CMD..."; check_prefix "$1"
    ns="$1-h$2"; shift 2; exec ip netns exec "$ns" "$@" ;;
  down) [ $# -eq 1 ] || die "usage: down PREFIX"; check_prefix "$1"; down "$1" ;;
  clean) for ns in $(ip netns list | awk '{print $1}' | grep '^tbh-' || true); do
           ip netns del "$ns" 2>/dev/null || true
         done ;;
  *) die "unknown command '$cmd'" ;;
esac
