#!/usr/bin/env bash
# Rail launcher benchmark: `gdrproxy netns move` + `restore` of 8 rails (addresses, routes,
# sysctls, multirail ARP profile) against a shell baseline doing the same with one `ip`/`nsenter`
# command per change (the way launch scripts do it), measured in the same run on the same
# namespaces. Prints medians and the ratio. Needs root. Touches only namespaces it creates.
#
#   tests/bench/netns/bench.sh [path/to/gdrproxy] [iterations]
set -euo pipefail
bin=${1:-build/gdrproxy}
# The tests' tool beside it: `netns move` with GDRPROXY_NETNS_TRACE_STEPS (TRACE=1 below).
testkit=$(dirname "$bin")/gdrproxy-testkit
iters=${2:-20}
rails=8
tag=$$
H=gbh$tag C=gbc$tag F=gbf$tag
work=$(mktemp -d /tmp/gdrproxy-netns-bench-XXXXXX)
cleanup() {
  for ns in "$C" "$H" "$F"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

for ns in "$H" "$C" "$F"; do
  ip netns add "$ns"
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
done
ip -n "$F" link add br0 type bridge
ip -n "$F" link set br0 up
for i in $(seq 0 $((rails - 1))); do
  ip -n "$H" link add name rdma$i type veth peer name p$i netns "$F"
  ip -n "$F" link set p$i master br0 up
  ip -n "$H" link set rdma$i mtu 4200
  ip -n "$H" addr add 192.0.2.$((10 + i))/24 dev rdma$i
  ip -n "$H" link set rdma$i up
  ip -n "$H" route add 203.0.113.$((i * 16))/28 via 192.0.2.1 dev rdma$i table $((100 + i))
  ip netns exec "$H" sysctl -qw net.ipv4.conf.rdma$i.arp_ignore=0 net.ipv4.conf.rdma$i.rp_filter=0
done
list=$(seq -s, -f 'rdma%g' 0 $((rails - 1)))

now_ns() { date +%s%N; }
dump() {
  ip -n "$H" -j addr; ip -n "$H" -4 -j route show table all; ip -n "$H" -j rule
  ip netns exec "$H" bash -c 'grep -H . /proc/sys/net/ipv4/conf/rdma*/{arp_announce,arp_ignore,arp_filter,rp_filter}'
}
settle() { # the kernel reports operstate UP a moment after link up
  for _ in $(seq 60); do [[ "$(dump)" == "$1" ]] && return 0; sleep 0.05; done
  echo "host state differs after restore" >&2; return 1
}
original=$(dump)
[[ -n "${TRACE:-}" ]] && { ip netns exec "$H" env GDRPROXY_NETNS_TRACE_STEPS=1 "$testkit" netns move --netns /run/netns/"$C" --ifaces "$list" --journal "$work/t.json"; ip netns exec "$H" env GDRPROXY_NETNS_TRACE_STEPS=1 "$testkit" netns restore --journal "$work/t.json"; exit 0; }

# --- gdrproxy ------------------------------------------------------------------------------
g_move=() g_restore=()
for _ in $(seq "$iters"); do
  j=$work/j.json
  t0=$(now_ns)
  ip netns exec "$H" "$bin" netns move --netns /run/netns/"$C" --ifaces "$list" --journal "$j" 2>/dev/null
  t1=$(now_ns)
  ip netns exec "$H" "$bin" netns restore --journal "$j" 2>/dev/null
  t2=$(now_ns)
  g_move+=($(((t1 - t0) / 1000))) g_restore+=($(((t2 - t1) / 1000)))
  rm -f "$j.done"
  settle "$original"
done

# --- shell baseline: one ip/nsenter/sysctl command per change -------------------------------
in_c() { nsenter --net=/run/netns/"$C" "$@"; }
in_h() { nsenter --net=/run/netns/"$H" "$@"; }
b_move=() b_restore=()
for _ in $(seq "$iters"); do
  t0=$(now_ns)
  for i in $(seq 0 $((rails - 1))); do
    d=rdma$i a=192.0.2.$((10 + i))
    in_h ip link set dev $d netns "$C"
    in_c ip link set dev $d mtu 4200
    in_c ip addr add $a/24 dev $d
    in_c ip link set dev $d up
    in_c ip route add 203.0.113.$((i * 16))/28 via 192.0.2.1 dev $d table $((100 + i))
    in_c sysctl -qw net.ipv4.conf.$d.arp_announce=2 net.ipv4.conf.$d.arp_ignore=1 \
      net.ipv4.conf.$d.arp_filter=1 net.ipv4.conf.$d.rp_filter=1
    in_c ip route add 192.0.2.0/24 dev $d src $a table $((1000 + i))
    in_c ip rule add from $a lookup $((1000 + i)) prio $((1000 + i))
  done
  t1=$(now_ns)
  for i in $(seq 0 $((rails - 1))); do
    d=rdma$i a=192.0.2.$((10 + i))
    in_c ip rule del from $a lookup $((1000 + i)) prio $((1000 + i))
    in_c ip link set dev $d netns "$H"
    in_h ip link set dev $d mtu 4200
    in_h ip addr add $a/24 dev $d
    in_h ip link set dev $d up
    in_h ip route add 203.0.113.$((i * 16))/28 via 192.0.2.1 dev $d table $((100 + i))
    in_h sysctl -qw net.ipv4.conf.$d.arp_announce=0 net.ipv4.conf.$d.arp_ignore=0 \
      net.ipv4.conf.$d.arp_filter=0 net.ipv4.conf.$d.rp_filter=0
  done
  t2=$(now_ns)
  b_move+=($(((t1 - t0) / 1000))) b_restore+=($(((t2 - t1) / 1000)))
  settle "$original"
done

# --- kernel floor: the 8 namespace changes alone, from one `ip -batch` process ------------------
f_move=() f_back=()
for i in $(seq 0 $((rails - 1))); do echo "link set dev rdma$i netns $C"; done >"$work/there"
for i in $(seq 0 $((rails - 1))); do echo "link set dev rdma$i netns $H"; done >"$work/back"
for _ in $(seq "$iters"); do
  t0=$(now_ns)
  ip -n "$H" -batch "$work/there"
  t1=$(now_ns)
  ip -n "$C" -batch "$work/back"
  t2=$(now_ns)
  f_move+=($(((t1 - t0) / 1000))) f_back+=($(((t2 - t1) / 1000)))
  for i in $(seq 0 $((rails - 1))); do  # the moves flushed the addresses: put them back
    ip -n "$H" addr add 192.0.2.$((10 + i))/24 dev rdma$i
    ip -n "$H" link set rdma$i up
    ip -n "$H" route add 203.0.113.$((i * 16))/28 via 192.0.2.1 dev rdma$i table $((100 + i))
  done
done

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
gm=$(median "${g_move[@]}") gr=$(median "${g_restore[@]}")
bm=$(median "${b_move[@]}") br=$(median "${b_restore[@]}")
ms() { awk -v u="$1" 'BEGIN {printf "%.1f ms", u / 1000}'; }
echo "rails=$rails iterations=$iters (median wall time per call, including process start)"
echo "gdrproxy netns move     $(ms "$gm")"
echo "gdrproxy netns restore  $(ms "$gr")"
echo "shell baseline move     $(ms "$bm")"
echo "shell baseline restore  $(ms "$br")"
awk -v gm="$gm" -v gr="$gr" -v bm="$bm" -v br="$br" 'BEGIN {
  printf "ratio baseline/gdrproxy: move %.1fx, restore %.1fx, move+restore %.1fx\n", bm / gm, br / gr, (bm + br) / (gm + gr) }'
fm=$(median "${f_move[@]}") fb=$(median "${f_back[@]}")
echo "kernel floor: $rails bare namespace changes there $(ms "$fm"), back $(ms "$fb") (one ip -batch process each)"
echo "goal <= 100 ms each: move $([[ $gm -le 100000 ]] && echo met || echo MISSED), restore $([[ $gr -le 100000 ]] && echo met || echo MISSED)"
