# shellcheck shell=bash
# The simulated two-node cluster of tests/harness/*.bats, loaded by each (`load lib`). Each node
# is a network namespace (entered with nsenter, run under a UTS namespace of its own hostname)
# with a bootstrap link eth0 and veth rails whose peer ends sit on one bridge in a third "fabric"
# namespace; node A has rail0..rail2 plus eth1 (a rail with an eth-like name) and rail3 (no
# IPv4), node B has rail0 and rail1. The idea not to miss: the nodes are the "hosts", so after
# every teardown each node's links, addresses, routes, rules and the rails' ARP/rp_filter
# sysctls must read back exactly as before the first prepare (snapshot, assert_restored).
# Addresses: 192.0.2.0/24 (bootstrap), 198.51.100.0/24 (rails) only. Every name carries the
# test file's prefix GH_P; cleanup_all removes everything, also after a failure.

# refute CMD...: CMD must fail (a bare `! CMD` does not fail a bats test).
refute() {
  if "$@"; then
    echo "unexpectedly succeeded: $*" >&2
    return 1
  fi
}

ns() { printf '/run/netns/%s%s' "$GH_P" "$1"; }

build_topology() {
  local f=${GH_P}F a=${GH_P}A b=${GH_P}B i
  ip netns add "$f" && ip netns add "$a" && ip netns add "$b" || return 1
  ip -n "$f" link add br0 type bridge || return 1  # the rails' fabric
  ip -n "$f" link add br1 type bridge || return 1  # the bootstrap network
  ip -n "$f" link set br0 up && ip -n "$f" link set br1 up && ip -n "$f" link set lo up || return 1
  # veth_to NODE NAME BRIDGE FABRIC_END [CIDR]
  veth_to() {
    ip -n "$f" link add "$4" type veth peer name "$2" netns "${GH_P}$1" || return 1
    ip -n "$f" link set "$4" master "$3" up || return 1
    if [[ -n ${5:-} ]]; then ip -n "${GH_P}$1" addr add "$5" dev "$2" || return 1; fi
    ip -n "${GH_P}$1" link set "$2" up
  }
  for n in A B; do ip -n "${GH_P}$n" link set lo up || return 1; done
  veth_to A eth0 br1 Ae0 192.0.2.10/24 || return 1
  veth_to B eth0 br1 Be0 192.0.2.20/24 || return 1
  ip -n "$a" route add default via 192.0.2.1 dev eth0 || return 1
  ip -n "$b" route add default via 192.0.2.1 dev eth0 || return 1
  for i in 0 1 2; do veth_to A "rail$i" br0 "Ar$i" "198.51.100.1$i/24" || return 1; done
  veth_to A eth1 br0 Ae1 198.51.100.13/24 || return 1
  veth_to A rail3 br0 Ar3 || return 1   # a rail without IPv4
  for i in 0 1; do veth_to B "rail$i" br0 "Br$i" "198.51.100.2$i/24" || return 1; done
  settle A && settle B || return 1
  snapshot A >"$GH_W/A.before" && snapshot B >"$GH_W/B.before"
}

cleanup_all() {
  local n m
  [[ -n ${GH_P:-} ]] || return 0
  for n in A B; do
    [[ -e $(ns "$n") ]] || continue
    on_node "$n" teardown >/dev/null 2>&1 || true
  done
  # Anything a failed teardown left: pinned namespaces under the work dir, state dirs.
  if [[ -n ${GH_W:-} && -d $GH_W ]]; then
    while read -r m; do umount "$m" 2>/dev/null || true; done < <(findmnt -rn -o TARGET | grep -F "$GH_W/" || true)
  fi
  for n in A B; do
    while read -r m; do umount "$m" 2>/dev/null || true; done < <(findmnt -rn -o TARGET | grep -F "/run/gdr-harness/${GH_P}-node$n/" || true)
    rm -rf "/run/gdr-harness/${GH_P}-node$n"
  done
  rmdir /run/gdr-harness 2>/dev/null || true
  for n in A B F; do ip netns del "${GH_P}$n" 2>/dev/null || true; done
  [[ -n ${GH_W:-} ]] && rm -rf "$GH_W"
  return 0
}

# on_node NODE HARNESS-ARGS...: the harness inside NODE's network namespace, hostname
# $GH_P-nodeNODE (so its state is /run/gdr-harness/$GH_P-nodeNODE unless GDR_HARNESS_STATE).
on_node() {
  local n=$1
  shift
  nsenter --net="$(ns "$n")" -- unshare --uts -- \
    bash -c 'hostname "$1" && shift && exec "$@"' _ "${GH_P}-node$n" "$HARNESS" "$@"
}
export -f on_node ns

# in_node NODE CMD...: a plain command in NODE's network namespace.
in_node() {
  local n=$1
  shift
  nsenter --net="$(ns "$n")" -- "$@"
}

# Wait (bounded) for IPv6 duplicate address detection and for RDMA ports to come up (soft-RoCE
# devices made again by a move), so snapshots see settled state.
settle() {
  local i
  for ((i = 0; i < 60; i++)); do
    [[ -z $(in_node "$1" ip -6 addr show tentative) ]] &&
      ! in_node "$1" rdma link show 2>/dev/null | grep -q 'state DOWN' && return 0
    sleep 0.1
  done
  return 0
}

# The node's network state the harness must leave untouched. Routes are sorted: the kernel
# orders its own link-local routes by when each link came up, which a move changes. RDMA links
# (none on a host without RDMA) are sorted too: a soft-RoCE device made again has a new index,
# which orders the listing.
snapshot() {
  in_node "$1" bash -c '
    ip -d link show
    ip addr show
    ip route show table all | sort
    ip rule show
    for d in /proc/sys/net/ipv4/conf/*/; do
      d=${d%/}
      for k in arp_announce arp_ignore arp_filter rp_filter; do echo "${d##*/}.$k=$(cat "$d/$k")"; done
    done
    rdma link show 2>/dev/null | sort'
}

# stop_node_b: lets the command node B holds (run in the background as $bpid, writing B.out,
# waiting for B.stop) end, and checks that it exited 0.
stop_node_b() {
  touch "$GH_W/B.stop"
  wait "$bpid"
  cat "$GH_W/B.out"
  grep -q 'CMD exited with status 0' "$GH_W/B.out"
}

# assert_restored NODE: the snapshot equals the one taken before the first prepare (retrying
# for up to 6 s while links come back up and DAD settles).
assert_restored() {
  local i
  for ((i = 0; i < 30; i++)); do
    settle "$1"
    snapshot "$1" >"$GH_W/$1.after"
    cmp -s "$GH_W/$1.before" "$GH_W/$1.after" && return 0
    sleep 0.2
  done
  diff -u "$GH_W/$1.before" "$GH_W/$1.after"
  echo "node $1: network state differs from before prepare" >&2
  return 1
}

# teardown_both: `teardown` succeeds on both nodes and each is as before its first prepare.
# shellcheck disable=SC2154 # status: set by bats's run
teardown_both() {
  run on_node A teardown
  [ "$status" -eq 0 ]
  run on_node B teardown
  [ "$status" -eq 0 ]
  assert_restored A
  assert_restored B
}

# log_calls_of NAME REAL: puts $GH_W/bin/NAME (put $GH_W/bin first in PATH) in front of REAL.
# Each call appends "PID NAME-AS-CALLED ARGS..." to $GH_W/NAME.calls and execs REAL under the
# name it was called by (podman calls the shim through a link named gdrproxy-runtime), so a test
# can tell which process ran what: an exec keeps the pid.
log_calls_of() {
  mkdir -p "$GH_W/bin"
  # shellcheck disable=SC2016 # the wrapper's own $$, $0 and $*
  printf '#!/bin/bash\necho "$$ ${0##*/} $*" >>%s/%s.calls\nexec -a "$0" %s "$@"\n' \
    "$GH_W" "$1" "$2" >"$GH_W/bin/$1"
  chmod +x "$GH_W/bin/$1"
  rm -f "$GH_W/$1.calls"
}

plan_rails() {
  jq -r '[.rails[].netdev] | join(",")' "/run/gdr-harness/${GH_P}-node$1/plan.json"
}

# wait_for FILE SECONDS
wait_for() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    [[ -e $1 ]] && return 0
    sleep 0.1
  done
  echo "timed out waiting for $1" >&2
  return 1
}
