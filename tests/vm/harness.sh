# shellcheck shell=bash
# shellcheck disable=SC2154 # repo, work, out, gdrproxy: set by lib.sh
# gdr-harness on two simulated nodes with real soft-RoCE rails, sourced by tests/vm/run-tests.sh
# (it needs the helpers of lib.sh). The layout of tests/harness/lib.bash: each node is a network
# namespace (the harness run under a UTS namespace of its own hostname) with a bootstrap link eth0
# and rails rail0, rail1 whose veth peers sit on one bridge of a "fabric" namespace; here each
# rail also carries an rxe device made on it inside its node (rxeA0, rxeA1, rxeB0, rxeB1). Then
# `gdr-harness prepare` on both nodes (B with the RDMA_PEER_IFACES line A printed), `gdr-harness
# run` of ib_write_bw on both (server on A, client on B) in runc containers served by the
# harness's agent, which traces their verbs calls, and `teardown` on both; then a run on A killed
# with SIGKILL and `teardown`.
# The one idea: `run` moves the rails into the container's network namespace, and rxe unregisters
# its device when its netdev leaves a namespace; `gdrproxy netns move` makes it again, same name,
# on the rail in the container's namespace (and `restore` on the node), the harness grants the
# new device's uverbs node, and after teardown each node reads back as before: links, addresses,
# routes, rules, ARP sysctls and its rxe devices (name, netdev, state), also after the killed run,
# whose journal alone gives the rails and devices back. It needs rxe with a UDP
# socket per network namespace (the default guest kernel; containers.sh says why).
# Addresses: 192.0.2.0/24 (bootstrap), 198.51.100.0/24 (rails) only. Every wait is bounded and
# everything made here is removed, also after a failure.

hn_t0=$(now_ms)
hn_problems=()
hn_work=$work/harness-nodes
hn_harness=$repo/harness/gdr-harness
rm -rf "$hn_work"
mkdir -p "$hn_work/logs"
log "harness-nodes: two nodes as network namespaces, rails with rxe devices"
grep -q ' rxe_ns_pernet_sk4' /proc/kallsyms ||
  hn_problems+=("guest kernel $(uname -r): rxe has no UDP socket per network namespace (boot the default guest kernel, scripts/vm/guest-kernel.sh)")
if [[ $(stat -f -c %T /sys/fs/cgroup 2>/dev/null) != cgroup2fs ]]; then
  mkdir -p /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup || hn_problems+=("no cgroup2")
fi

# hn_node NODE HARNESS-ARGS...: the harness in NODE's namespace, hostname gdrvm-nodeNODE, through
# runc containers (podman is installed here too: the runtime is named, not auto).
# shellcheck disable=SC2016 # the inner bash's own $1 and $@
hn_node() {
  local n=$1
  shift
  (cd "$hn_work" && GDRPROXY=$gdrproxy GDR_HARNESS_RUNTIME=runc GDR_HARNESS_LOG_DIR=$hn_work/logs \
    timeout -k 5 150 nsenter --net="/run/netns/gdrvm$n" -- unshare --uts -- \
    bash -c 'hostname "$1" && shift && exec "$@"' _ "gdrvm-node$n" "$hn_harness" "$@")
}
# What must read back the same after teardown, and the wait for it to settle: lib.bash's
# snapshot, settle and assert_restored (network state and RDMA links), on this file's nodes.
# shellcheck source=tests/harness/lib.bash
. "$repo/tests/harness/lib.bash"
GH_P=gdrvm GH_W=$hn_work
hn_cleanup() {
  local n d
  for n in A B; do
    [[ -e /run/netns/gdrvm$n ]] && hn_node "$n" teardown >>"$hn_work/cleanup.log" 2>&1
  done
  for d in rxeA0 rxeA1 rxeB0 rxeB1; do rdma link delete "$d" 2>/dev/null; done
  for n in A B F; do ip netns delete "gdrvm$n" 2>/dev/null; done
  return 0
}

if ((${#hn_problems[@]} == 0)); then
  {
    ip netns add gdrvmF && ip netns add gdrvmA && ip netns add gdrvmB &&
      ip -n gdrvmF link add br0 type bridge && ip -n gdrvmF link add br1 type bridge &&
      ip -n gdrvmF link set br0 up && ip -n gdrvmF link set br1 up && ip -n gdrvmF link set lo up &&
      ip -n gdrvmA link set lo up && ip -n gdrvmB link set lo up
  } || hn_problems+=("cannot make the nodes' namespaces and bridges")
  # hn_veth NODE NAME BRIDGE FABRIC_END CIDR
  hn_veth() {
    ip -n gdrvmF link add "$4" type veth peer name "$2" netns "gdrvm$1" &&
      ip -n gdrvmF link set "$4" master "$3" up &&
      ip -n "gdrvm$1" addr add "$5" dev "$2" && ip -n "gdrvm$1" link set "$2" up
  }
  hn_veth A eth0 br1 Ae0 192.0.2.10/24 && hn_veth B eth0 br1 Be0 192.0.2.20/24 &&
    ip -n gdrvmA route add default via 192.0.2.1 dev eth0 &&
    ip -n gdrvmB route add default via 192.0.2.1 dev eth0 || hn_problems+=("cannot make the bootstrap links")
  for n in A B; do
    for i in 0 1; do
      hn_veth "$n" "rail$i" br0 "$n"r$i "198.51.100.$([[ $n == A ]] && echo 1 || echo 2)$i/24" ||
        hn_problems+=("cannot make rail$i of node $n")
      timeout 30 ip netns exec "gdrvm$n" rdma link add "rxe$n$i" type rxe netdev "rail$i" ||
        hn_problems+=("rxe$n$i not made on node $n's rail$i")
    done
  done
  for d in rxeA0 rxeA1 rxeB0 rxeB1; do wait_port "$d" ACTIVE || hn_problems+=("$d not ACTIVE"); done
  settle A
  settle B
  snapshot A >"$hn_work/A.before"
  snapshot B >"$hn_work/B.before"
  log "harness-nodes: $(rdma link show | grep -c 'rxe[AB][01]') rxe devices; problems so far: ${hn_problems[*]:-none}"
fi

if ((${#hn_problems[@]} == 0)); then
  hn_node A prepare >"$hn_work/A.prepare" 2>&1 || hn_problems+=("prepare on A: $(tail -1 "$hn_work/A.prepare")")
  hn_peer=$(grep -m1 '^RDMA_PEER_IFACES=' "$hn_work/A.prepare")
  RDMA_PEER_IFACES=${hn_peer#RDMA_PEER_IFACES=} hn_node B prepare >"$hn_work/B.prepare" 2>&1 ||
    hn_problems+=("prepare on B: $(tail -1 "$hn_work/B.prepare")")
  for n in A B; do
    hca=$(jq -r .nccl_ib_hca "/run/gdr-harness/gdrvm-node$n/plan.json" 2>/dev/null)
    [[ $hca == "=rxe${n}0:1,rxe${n}1:1" ]] ||
      hn_problems+=("node $n's plan: NCCL_IB_HCA '$hca', not its own rxe${n}0, rxe${n}1 (another node's devices on rails of the same names?)")
  done
fi

# ib_write_bw in each node's container: the RoCE v2 GID index of the rail's address read inside
# (the device is made again after prepare), the container's /dev/infiniband printed.
# shellcheck disable=SC2016 # expanded by the container's shell
hn_gid='g=; for i in $(seq 0 15); do [ "$(cat /sys/class/infiniband/IB/ports/1/gid_attrs/types/$i 2>/dev/null)" = "RoCE v2" ] && case $(cat /sys/class/infiniband/IB/ports/1/gids/$i) in *ffff:c633:64*) g=$i; break;; esac; done'
if ((${#hn_problems[@]} == 0)); then
  log "harness-nodes: gdr-harness run ib_write_bw, server on A, client on B"
  DEBUG_ALL=1 hn_node A run -- sh -c "${hn_gid//IB/rxeA0}; echo dev: \$(ls /dev/infiniband); exec ib_write_bw -d rxeA0 -x \$g -F -n 50 -s 4096" \
    >"$hn_work/A.run" 2>&1 &
  hn_spid=$!
  hn_ready=0
  for ((i = 0; i < 600; i++)); do
    if [[ -e /run/gdr-harness/gdrvm-nodeA/run/netns ]] &&
      [[ -n $(nsenter --net=/run/gdr-harness/gdrvm-nodeA/run/netns ss -Hltn 'sport = :18515' 2>/dev/null) ]]; then
      hn_ready=1
      break
    fi
    kill -0 "$hn_spid" 2>/dev/null || break
    sleep 0.1
  done
  ((hn_ready)) || hn_problems+=("the server on A did not listen within 60 s: $(tail -2 "$hn_work/A.run" | tr '\n' ' ')")
  if ((hn_ready)); then
    DEBUG_ALL=1 hn_node B run -- sh -c "${hn_gid//IB/rxeB0}; echo dev: \$(ls /dev/infiniband); exec ib_write_bw -d rxeB0 -x \$g -F -n 50 -s 4096 198.51.100.10" \
      >"$hn_work/B.run" 2>&1
    hn_crc=$?
    ((hn_crc == 0)) || hn_problems+=("client run on B: exit $hn_crc: $(tail -2 "$hn_work/B.run" | tr '\n' ' ' | cut -c1-200)")
  fi
  for ((i = 0; i < 300; i++)); do kill -0 "$hn_spid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$hn_spid" 2>/dev/null && { log "harness-nodes: server run still alive, teardown stops it"; hn_node A teardown >>"$hn_work/cleanup.log" 2>&1; }
  wait "$hn_spid"
  hn_src=$?
  ((hn_src == 0)) || hn_problems+=("server run on A: exit $hn_src: $(tail -2 "$hn_work/A.run" | tr '\n' ' ' | cut -c1-200)")
  for n in A B; do
    f=$hn_work/$n.run
    grep -q "soft-RoCE device rxe${n}0 made again on it in" "$f" && grep -q "soft-RoCE device rxe${n}1 made again on it in" "$f" ||
      hn_problems+=("node $n: the move did not say it made rxe${n}0/rxe${n}1 again")
    grep -q "soft-RoCE device rxe${n}0 made again on it (" "$f" ||
      hn_problems+=("node $n: restore did not say it made rxe${n}0 again")
    grep -Eq '^ *4096 +50 ' "$f" || hn_problems+=("node $n: no ib_write_bw result row")
    grep -q '^dev: rdma_cm uverbs[0-9]* uverbs[0-9]*$' "$f" ||
      hn_problems+=("node $n's container saw /dev/infiniband: $(grep '^dev:' "$f")")
    t=$(find "$hn_work/logs/gdrproxy-trace.gdrvm-node$n" -name '*.jsonl' 2>/dev/null | head -1)
    for c in GET_CONTEXT REG_MR CREATE_QP MODIFY_QP; do
      jq -e -s --arg c "$c" 'any(.[]; (.call // "") | test($c))' "$t" >/dev/null 2>&1 ||
        hn_problems+=("node $n: no $c in the agent's trace ${t:-(none)}")
    done
  done
fi

# hn_restored NODE TAG: NODE reads back as before prepare (assert_restored retries 6 s while
# links and DAD settle); else a problem naming TAG.
hn_restored() {
  assert_restored "$1" 2>/dev/null | sed -n '1,30s/^/    [diff] /p'
  ((PIPESTATUS[0] == 0)) ||
    hn_problems+=("node $1 not restored $2 (netdevs, addresses, routes, rules, sysctls or rxe devices differ)")
}
if [[ -e /run/netns/gdrvmA ]]; then
  for n in A B; do
    hn_node "$n" teardown >"$hn_work/$n.teardown" 2>&1 || hn_problems+=("teardown on $n: $(tail -1 "$hn_work/$n.teardown")")
  done
  if [[ -s $hn_work/A.before ]]; then
    hn_restored A "after the runs"
    hn_restored B "after the runs"
  fi
fi

# A run killed with SIGKILL while its container holds the rails (their rxe devices made again
# there): `teardown` gives them back from the journal alone and makes the devices again on A.
if ((${#hn_problems[@]} == 0)); then
  log "harness-nodes: a run on A killed with SIGKILL, then teardown"
  hn_node A prepare >"$hn_work/A.prepare2" 2>&1 || hn_problems+=("second prepare on A: $(tail -1 "$hn_work/A.prepare2")")
  hn_node A run -- sleep 120 >"$hn_work/A.killed" 2>&1 &
  hn_kpid=$!
  hn_owner=/run/gdr-harness/gdrvm-nodeA/run/owner
  for ((i = 0; i < 600; i++)); do
    grep -q '^gdr-harness: running in the container' "$hn_work/A.killed" 2>/dev/null && [[ -s $hn_owner ]] && break
    kill -0 "$hn_kpid" 2>/dev/null || break
    sleep 0.1
  done
  if read -r hn_hpid _ <"$hn_owner" 2>/dev/null && [[ $hn_hpid =~ ^[0-9]+$ ]]; then
    sleep 1
    kill -KILL "$hn_hpid"
  else
    hn_problems+=("the run to kill did not start within 60 s: $(tail -2 "$hn_work/A.killed" | tr '\n' ' ')")
  fi
  for ((i = 0; i < 100; i++)); do kill -0 "$hn_kpid" 2>/dev/null || break; sleep 0.1; done
  grep -q 'soft-RoCE device rxeA0 made again on it in' "$hn_work/A.killed" ||
    hn_problems+=("killed run: the move did not say it made rxeA0 again")
  hn_node A teardown >"$hn_work/A.teardown2" 2>&1 || hn_problems+=("teardown on A after the killed run: $(tail -1 "$hn_work/A.teardown2")")
  wait "$hn_kpid" 2>/dev/null
  grep -q 'soft-RoCE device rxeA0 made again on it (' "$hn_work/A.teardown2" ||
    hn_problems+=("teardown after the killed run did not say it made rxeA0 again")
  hn_restored A "after a killed run's teardown"
fi
mkdir -p "$out/harness-nodes" && cp "$hn_work"/*.* "$out/harness-nodes/" 2>/dev/null
if ((${#hn_problems[@]} == 0)); then
  bw=$(grep -Eh '^ *4096 +50 ' "$hn_work/B.run" | awk '{print $4}')
  record harness-two-nodes PASS $(($(now_ms) - hn_t0)) "prepare/run/teardown on 2 nodes; ib_write_bw ${bw} MB/s over RoCE v2 (rxe made again in the containers, traced by the agent); both restored, also after a killed run"
else
  for f in "$hn_work"/*.prepare* "$hn_work"/*.run "$hn_work"/*.killed "$hn_work"/*.teardown* "$hn_work/cleanup.log"; do
    [[ -f $f ]] && show "$f" "$(basename "$f")"
  done
  record harness-two-nodes FAIL $(($(now_ms) - hn_t0)) "$(IFS='; '; echo "${hn_problems[*]}")"
fi
hn_cleanup
