#!/usr/bin/env bats
# harness/gdr-harness on two simulated nodes of this machine. Each node is a network namespace
# (entered with nsenter, run under a UTS namespace of its own hostname) with a bootstrap link
# eth0 and veth rails whose peer ends sit on one bridge in a third "fabric" namespace; node A
# has rail0..rail2 plus eth1 (a rail with an eth-like name) and rail3 (no IPv4), node B has
# rail0 and rail1. The idea not to miss: the nodes are the "hosts" here, so after every
# teardown each node's links, addresses, routes, rules and the rails' ARP/rp_filter sysctls
# must read back exactly as they did before the first prepare. No RDMA device exists on this
# machine, so every rail is a plain one (ibdev: none) and NCCL_IB_HCA stays empty; the RDMA-backed
# path (real ibdevs, NCCL_IB_HCA, the synthetic /sys) needs the soft-RoCE VM.
# Addresses: 192.0.2.0/24 (bootstrap), 198.51.100.0/24 (rails) only. Every name carries this
# run's pid; teardown_file removes everything, also after a failure.
# Usage: GDRPROXY=build/gdrproxy bats tests/harness/two_nodes.bats   (root)

setup_file() {
  export GH_ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
  export HARNESS="$GH_ROOT/harness/gdr-harness"
  GDRPROXY=${GDRPROXY:-$GH_ROOT/build/gdrproxy}
  export GDRPROXY="$(realpath "$GDRPROXY")"
  export GH_P="gh$$"
  export GH_W="$BATS_FILE_TMPDIR/w"
  mkdir -p "$GH_W"
  if [[ $(id -u) -ne 0 ]]; then
    export GH_SKIP="needs root (network namespaces, veths, bridges)"
    return 0
  fi
  if [[ ! -x $GDRPROXY ]]; then
    echo "no gdrproxy binary at $GDRPROXY (build it, or set GDRPROXY)" >&2
    return 1
  fi
  build_topology || { cleanup_all; return 1; }
}

teardown_file() {
  cleanup_all
}

setup() {
  [[ -z ${GH_SKIP:-} ]] || skip "$GH_SKIP"
}

# Each case leaves both nodes torn down, whatever happened in it.
teardown() {
  [[ -n ${GH_SKIP:-} ]] && return 0
  local n
  for n in A B; do timeout 60 bash -c 'on_node "$1" teardown' _ "$n" >/dev/null 2>&1 || true; done
}

load lib

# ---------------------------------------------------------------------------------------------
# (1) asymmetric rails end symmetric through the RDMA_PEER_IFACES line

@test "asymmetric rails: A has 3, B has 2; the printed RDMA_PEER_IFACES line makes both sets equal" {
  export RDMA_IFACES=rail0,rail1,rail2
  run on_node A prepare
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"ibdev: none for rail0,rail1,rail2"* ]]
  [[ $output == *"NCCL_IB_HCA: empty"* ]]
  line=$(grep '^RDMA_PEER_IFACES=' <<<"$output")
  [ "$line" = "RDMA_PEER_IFACES=rail0,rail1,rail2" ]
  [ "$(plan_rails A)" = rail0,rail1,rail2 ]
  # prepare ends with gdrproxy doctor's verdict and keeps its report, checked with the plan's
  # NCCL environment (the bootstrap interface as NCCL_SOCKET_IFNAME).
  [[ $output =~ doctor:\ (PASS|WARN|FAIL)\ \([0-9]+\ pass,\ [0-9]+\ warn,\ [0-9]+\ fail\) ]]
  rep=/run/gdr-harness/${GH_P}-nodeA/doctor.json
  jq -e '.schema == "gdrproxy.doctor" and (.checks | length > 0)' "$rep"
  jq -e '.checks[] | select(.id == "nccl.socket_ifname") | .found | contains("eth0")' "$rep"

  run env "$line" bash -c 'on_node B prepare'
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"rail2: not in this network namespace; skipped"* ]]
  line=$(grep '^RDMA_PEER_IFACES=' <<<"$output")
  [ "$line" = "RDMA_PEER_IFACES=rail0,rail1" ]
  [ "$(plan_rails B)" = rail0,rail1 ]

  run env "$line" bash -c 'on_node A prepare'
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"rail2: the peer has no rail of that name; skipped"* ]]
  [ "$(plan_rails A)" = rail0,rail1 ]
  [ "$(grep '^RDMA_PEER_IFACES=' <<<"$output")" = "RDMA_PEER_IFACES=rail0,rail1" ]
}

# ---------------------------------------------------------------------------------------------
# (2) selection rules

@test "selection: include-list wins over the exclude regex; default exclude drops eth*; no-IPv4 rail" {
  # Every netdev a candidate (stand-in rig): the default regex drops eth0 and eth1.
  run env RDMA_PLAIN_RAILS=1 RDMA_AUTO_SKIP_NO_IPV4=1 bash -c 'on_node A prepare'
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"eth0: excluded by regex ^eth[0-9]+\$"* ]]
  [[ $output == *"eth1: excluded by regex ^eth[0-9]+\$"* ]]
  [[ $output == *"rail3: no IPv4 address; skipped"* ]]
  [ "$(plan_rails A)" = rail0,rail1,rail2 ]

  # The include-list names eth1: it wins over the (default) regex.
  run env RDMA_IFACES=rail0,eth1 bash -c 'on_node A prepare'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(plan_rails A)" = rail0,eth1 ]

  # Regex disabled: eth1 is a rail, eth0 still stays (it carries the default route).
  run env RDMA_PLAIN_RAILS=1 RDMA_EXCLUDE_REGEX= RDMA_AUTO_SKIP_NO_IPV4=1 bash -c 'on_node A prepare'
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"eth0: carries the default route; skipped"* ]]
  [ "$(plan_rails A)" = rail0,rail1,rail2,eth1 ]

  # A rail without IPv4 is an error naming it, unless RDMA_AUTO_SKIP_NO_IPV4=1.
  run env RDMA_IFACES=rail0,rail3 bash -c 'on_node A prepare'
  echo "$output"
  [ "$status" -eq 1 ]
  [[ $output == *"rail(s) rail3: no IPv4 address"*"RDMA_AUTO_SKIP_NO_IPV4=1"* ]]
  run env RDMA_IFACES=rail0,rail3 RDMA_AUTO_SKIP_NO_IPV4=1 bash -c 'on_node A prepare'
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"rail3: no IPv4 address; skipped"* ]]
  [ "$(plan_rails A)" = rail0 ]

  # The bootstrap interface named as a rail: refused unless ALLOW_BOOTSTRAP_RDMA_IFACE=1.
  run env RDMA_IFACES=eth0 bash -c 'on_node A prepare'
  echo "$output"
  [ "$status" -eq 1 ]
  [[ $output == *"eth0: refusing to select it: it carries the default route"*"ALLOW_BOOTSTRAP_RDMA_IFACE=1"* ]]

  # Nothing left: exit 3 with the reason.
  run env RDMA_IFACES=rail0 RDMA_PEER_IFACES=rail7 bash -c 'on_node A prepare'
  echo "$output"
  [ "$status" -eq 3 ]
  [[ $output == *"rail0: the peer has no rail of that name"* ]]
}

@test "identity: Slurm ranks shown in status; local rank 1 leaves prepare to local rank 0" {
  run env SLURM_PROCID=3 SLURM_LOCALID=1 SLURM_NODEID=1 RDMA_IFACES=rail0 bash -c 'on_node A prepare'
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"local rank 1 has nothing to do"* ]]
  [ ! -e "/run/gdr-harness/${GH_P}-nodeA/plan.json" ]
  run env OMPI_COMM_WORLD_RANK=5 OMPI_COMM_WORLD_LOCAL_RANK=0 RDMA_IFACES=rail0 bash -c 'on_node A prepare'
  [ "$status" -eq 0 ]
  run env SLURM_PROCID=3 SLURM_LOCALID=1 SLURM_NODEID=1 bash -c 'on_node A status'
  echo "$output"
  [[ $output == *"node ${GH_P}-nodeA"*"launcher slurm node index 1 rank 3 local rank 1"* ]]
  [[ $output == *"rail rail0 ibdev none"* ]]
  [[ $output == *"run: none"* ]]

  # GDR_HARNESS_STATE moves the state; usage errors are one line and exit 2.
  run env GDR_HARNESS_STATE="$GH_W/stA" RDMA_IFACES=rail1 bash -c 'on_node A prepare'
  [ "$status" -eq 0 ]
  [ "$(jq -r '[.rails[].netdev] | join(",")' "$GH_W/stA/plan.json")" = rail1 ]
  run env GDR_HARNESS_STATE="$GH_W/stA" bash -c 'on_node A teardown'
  [ "$status" -eq 0 ]
  [ ! -e "$GH_W/stA" ]
  run on_node A prepare extra
  [ "$status" -eq 2 ]
  run on_node A run
  [ "$status" -eq 2 ]
  [[ $output == *"run needs a command"* ]]
  run on_node A frobnicate
  [ "$status" -eq 2 ]
  for sub in prepare run status teardown; do
    run "$HARNESS" "$sub" --help
    [ "$status" -eq 0 ]
    [[ $output == *Example* ]]
  done
}

# ---------------------------------------------------------------------------------------------
# (3) run

@test "run: each container reaches its peer over every rail; NCCL environment" {
  export RDMA_IFACES=rail0,rail1
  run on_node A prepare
  [ "$status" -eq 0 ]
  run on_node B prepare
  [ "$status" -eq 0 ]

  # B's container waits (bounded) while A's container pings it; both hold their rails.
  rm -f "$GH_W/B.up" "$GH_W/B.stop"
  GDR_HARNESS_BOOTSTRAP_ADDR=192.0.2.120/24 timeout 60 bash -c 'on_node B run -- bash -c "$1"' _ \
    "touch '$GH_W/B.up'; for i in \$(seq 200); do [ -e '$GH_W/B.stop' ] && exit 0; sleep 0.1; done; exit 9" \
    >"$GH_W/B.out" 2>&1 &
  bpid=$!
  wait_for "$GH_W/B.up" 20 || { cat "$GH_W/B.out"; false; }
  refute in_node B ip link show rail0 >/dev/null 2>&1   # moved out of node B's namespace

  script='set -e; env | sort >"$0/A.env"; ip -o link show | cut -d: -f2 >"$0/A.links"
    for i in 0 1; do ping -q -I rail$i -c1 -W1 198.51.100.2$i; done
    ping -q -I eth0 -c1 -W1 192.0.2.120'
  run env GDR_HARNESS_BOOTSTRAP_ADDR=192.0.2.110/24 UCX_TLS=rc NIXL_PLUGIN_DIR=/x NCCL_ALGO=Ring \
    NCCL_SOCKET_IFNAME=rail0 OTHER_VAR=1 timeout 60 bash -c 'on_node A run -- bash -c "$1" "$GH_W"' _ "$script"
  echo "$output"
  [ "$status" -eq 0 ]
  stop_node_b

  # Inside: the rails and the bootstrap link, nothing else of the node.
  sed 's/^ *//; s/@.*//' "$GH_W/A.links" | sort | tr '\n' ' ' >"$GH_W/A.links.s"
  [ "$(cat "$GH_W/A.links.s")" = "eth0 lo rail0 rail1 " ]
  grep -qx 'NCCL_SOCKET_IFNAME=eth0' "$GH_W/A.env"
  [[ $output == *"the caller's value 'rail0' is replaced by the bootstrap interface"* ]]
  refute grep -q '^NCCL_IB_HCA=' "$GH_W/A.env"     # no RDMA device: not set, and said so
  [[ $output == *"NCCL_IB_HCA not set: no rail of the plan has an RDMA device"* ]]
  [[ $output == *"CMD runs directly, not under gdrproxy run"* ]]
  grep -qx 'UCX_TLS=rc' "$GH_W/A.env"
  grep -qx 'NIXL_PLUGIN_DIR=/x' "$GH_W/A.env"
  grep -qx 'NCCL_ALGO=Ring' "$GH_W/A.env"
  refute grep -q '^OTHER_VAR=' "$GH_W/A.env"
  refute grep -q '^NCCL_DEBUG=' "$GH_W/A.env"
  # The rails are back on both nodes.
  in_node A ip link show rail1 >/dev/null
  in_node B ip link show rail1 >/dev/null

  # B's container pings A's rails (back on node A, unmoved) the other way round.
  run timeout 60 bash -c 'on_node B run -- bash -c "$1"' _ \
    'for i in 0 1; do ping -q -I rail$i -c1 -W1 198.51.100.1$i || exit 1; done'
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "run in runc containers served by an agent: peers over every rail; crun refused on hybrid cgroups; killed run torn down" {
  command -v runc >/dev/null || { echo "runc is not installed (scripts/setup.sh installs it)" >&2; false; }
  export RDMA_IFACES=rail0,rail1
  run on_node A prepare
  [ "$status" -eq 0 ]
  run on_node B prepare
  [ "$status" -eq 0 ]
  cd "$GH_W"  # the container's working directory, bound read-write: the results land here

  # crun 1.8 drives cgroup v2 only: on a host with v1 controllers beside cgroup2 the harness
  # refuses before anything changes, saying so.
  if [[ $(stat -f -c %T /sys/fs/cgroup) != cgroup2fs ]] && command -v crun >/dev/null; then
    run env GDR_HARNESS_RUNTIME=crun timeout 30 bash -c 'on_node B run -- true'
    echo "$output"
    [ "$status" -eq 125 ]
    [[ $output == *"crun drives cgroup v2 only"* ]]
    in_node B ip link show rail0 >/dev/null
  fi

  rm -f "$GH_W/B.up" "$GH_W/B.stop"
  env GDR_HARNESS_RUNTIME=runc GDR_HARNESS_BOOTSTRAP_ADDR=192.0.2.120/24 timeout 60 \
    bash -c 'on_node B run -- sh -c "$1"' _ \
    "touch B.up; for i in \$(seq 200); do [ -e B.stop ] && exit 0; sleep 0.1; done; exit 9" \
    >"$GH_W/B.out" 2>&1 &
  bpid=$!
  wait_for "$GH_W/B.up" 30 || { cat "$GH_W/B.out"; false; }
  grep -q 'container gdrh-'"$GH_P"'-nodeB by runc' "$GH_W/B.out"
  grep -q 'rule containers\[0\], grants \[\]' "/run/gdr-harness/${GH_P}-nodeB/run/agent.log"

  script='set -e; env | sort >A.env; ip -o link show | cut -d: -f2 >A.links
    grep -E "^(Seccomp|CapEff):" /proc/self/status >A.status; ls /dev >A.dev
    for i in 0 1; do ping -q -I rail$i -c1 -W1 198.51.100.2$i; done
    ping -q -I eth0 -c1 -W1 192.0.2.120'
  # Node A's gdrproxy and runc log each call with their pid before they exec the real ones.
  log_calls_of gdrproxy "$GDRPROXY"
  log_calls_of runc "$(command -v runc)"
  run env GDR_HARNESS_RUNTIME=runc GDR_HARNESS_BOOTSTRAP_ADDR=192.0.2.110/24 UCX_TLS=rc OTHER_VAR=1 \
    GDRPROXY="$GH_W/bin/gdrproxy" PATH="$GH_W/bin:$PATH" timeout 60 bash -c 'on_node A run -- sh -c "$1"' _ "$script"
  echo "$output"
  [ "$status" -eq 0 ]
  stop_node_b

  [[ $output == *"CMD runs in a runc container served by gdrproxy agent"* ]]
  [[ $output == *"container gdrh-${GH_P}-nodeA by runc through the runtime shim"* ]]
  # runc was reached through the shim: the process that ran `runc run` for A's container is the
  # one that started as `gdrproxy runtime` (the shim execs the real runtime), the shim prepared
  # the bundle (its line names it), and the harness ran no `gdrproxy oci prepare` of its own.
  shim_pid=$(awk '/ runtime --config .* run --bundle .*\/ctr-node\/bundle / {print $1}' "$GH_W/gdrproxy.calls")
  runc_pid=$(awk '/ run --bundle .*\/ctr-node\/bundle / {print $1}' "$GH_W/runc.calls")
  cat "$GH_W/gdrproxy.calls" "$GH_W/runc.calls"
  [[ -n $shim_pid && $shim_pid == "$runc_pid" ]]
  [[ $output == *"gdrproxy runtime: /run/gdr-harness/${GH_P}-nodeA/run/ctr-node/bundle/config.json: grants [], listener /run/gdr-harness/${GH_P}-nodeA/run/agent.sock"* ]]
  refute grep -q ' oci prepare ' "$GH_W/gdrproxy.calls"
  sed 's/^ *//; s/@.*//' "$GH_W/A.links" | sort | tr '\n' ' ' >"$GH_W/A.links.s"
  [ "$(cat "$GH_W/A.links.s")" = "eth0 lo rail0 rail1 " ]
  grep -qx 'NCCL_SOCKET_IFNAME=eth0' "$GH_W/A.env"
  grep -qx 'UCX_TLS=rc' "$GH_W/A.env"
  refute grep -q '^OTHER_VAR=' "$GH_W/A.env"
  # The container is under the agent's seccomp listener (filter mode 2) and holds no device node
  # of the host: no rail has an RDMA device, so nothing is granted.
  grep -qx 'Seccomp:[[:space:]]*2' "$GH_W/A.status"
  refute grep -qE '^(infiniband|nvidia)' "$GH_W/A.dev"
  # After the run: rails back, the container deleted, the run's agent gone, no state left.
  in_node A ip link show rail1 >/dev/null
  in_node B ip link show rail1 >/dev/null
  [ ! -e "/run/gdr-harness/${GH_P}-nodeA/run" ]
  [ ! -e "/run/gdr-harness/${GH_P}-nodeB/run" ]
  refute pgrep -f "/run/gdr-harness/${GH_P}-node[AB]/run/agent.sock"

  # A run killed with SIGKILL: teardown deletes its container and stops its agent.
  st=/run/gdr-harness/${GH_P}-nodeA
  GDR_HARNESS_RUNTIME=runc on_node A run -- sleep 127 >"$GH_W/k.out" 2>&1 &
  kpid=$!
  for ((i = 0; i < 200; i++)); do grep -q 'running in the container' "$GH_W/k.out" && break; sleep 0.1; done
  for ((i = 0; i < 100; i++)); do [[ $(runc --root "$st/run/ctr-node/runtime" state "gdrh-${GH_P}-nodeA" 2>/dev/null | jq -r .status) == running ]] && break; sleep 0.1; done
  [[ $(runc --root "$st/run/ctr-node/runtime" state "gdrh-${GH_P}-nodeA" | jq -r .status) == running ]]
  read -r owner _ <"$st/run/owner"
  read -r agent _ <"$st/run/agent.pid"
  kill -KILL "$owner"
  wait "$kpid" || true
  kill -0 "$agent"   # the agent outlives the harness until teardown
  run on_node A teardown
  echo "$output"
  [ "$status" -eq 0 ]
  [ ! -e "$st" ]
  refute kill -0 "$agent" 2>/dev/null
  refute pgrep -fx "sleep 127"
  run on_node B teardown
  [ "$status" -eq 0 ]
  assert_restored A
  assert_restored B
}

@test "run in podman containers through the runtime shim: peers over every rail; DEBUG_ALL env; killed run torn down" {
  command -v podman >/dev/null || skip "podman is not installed (scripts/setup.sh installs it)"
  export RDMA_IFACES=rail0,rail1
  run on_node A prepare
  [ "$status" -eq 0 ]
  run on_node B prepare
  [ "$status" -eq 0 ]
  cd "$GH_W"  # the container's working directory, bound read-write: the results land here
  export GDR_HARNESS_RUNTIME=podman

  rm -f "$GH_W/B.up" "$GH_W/B.stop"
  GDR_HARNESS_BOOTSTRAP_ADDR=192.0.2.120/24 timeout 90 bash -c 'on_node B run -- sh -c "$1"' _ \
    "touch B.up; for i in \$(seq 300); do [ -e B.stop ] && exit 0; sleep 0.1; done; exit 9" \
    >"$GH_W/B.out" 2>&1 &
  bpid=$!
  wait_for "$GH_W/B.up" 60 || { cat "$GH_W/B.out"; false; }
  podman container exists "gdrh-${GH_P}-nodeB"
  # The node's agent knows podman's container by the shim's metadata line: its rule, not the default.
  grep -q 'rule containers\[0\], grants \[\]' "/run/gdr-harness/${GH_P}-nodeB/run/agent.log" ||
    { cat "/run/gdr-harness/${GH_P}-nodeB/run/agent.log"; false; }

  script='set -e; env | sort >A.env; ip -o link show | cut -d: -f2 >A.links; hostname >A.host
    grep -E "^(Seccomp|CapEff):" /proc/self/status >A.status; ls /dev >A.dev
    for i in 0 1; do ping -q -I rail$i -c1 -W1 198.51.100.2$i; done
    ping -q -I eth0 -c1 -W1 192.0.2.120'
  # Node A's gdrproxy and runc log each call with their pid (and the name gdrproxy was called
  # by: podman calls the shim as gdrproxy-runtime) before they exec the real ones.
  log_calls_of gdrproxy "$GDRPROXY"
  log_calls_of runc "$(command -v runc)"
  run env DEBUG_ALL=1 GDR_HARNESS_LOG_DIR="$GH_W" GDR_HARNESS_BOOTSTRAP_ADDR=192.0.2.110/24 UCX_TLS=rc \
    NIXL_PLUGIN_DIR=/x NCCL_ALGO=Ring OTHER_VAR=1 GDRPROXY="$GH_W/bin/gdrproxy" PATH="$GH_W/bin:$PATH" \
    timeout 90 bash -c 'on_node A run -- sh -c "$1"' _ "$script"
  echo "$output"
  [ "$status" -eq 0 ]
  stop_node_b

  [[ $output == *"CMD runs in a podman container served by gdrproxy agent, started through the runtime shim"* ]]
  [[ $output == *"container gdrh-${GH_P}-nodeA by podman, its OCI runtime the shim (gdrproxy runtime, config /run/gdr-harness/${GH_P}-nodeA/run/ctr-node/runtime.json) over runc"* ]]
  # podman reached runc through the shim: the process podman ran as gdrproxy-runtime to create
  # A's container is the one that became `runc create` (the shim execs the real runtime).
  cat "$GH_W/gdrproxy.calls" "$GH_W/runc.calls"
  shim_pid=$(awk '$2 == "gdrproxy-runtime" && / create / {print $1}' "$GH_W/gdrproxy.calls")
  runc_pid=$(awk '/ create / {print $1}' "$GH_W/runc.calls")
  [[ -n $shim_pid && $shim_pid == "$runc_pid" ]]
  refute grep -q ' oci prepare ' "$GH_W/gdrproxy.calls"
  # The container's network namespace is the node's rail namespace: its rails, the bootstrap
  # link, nothing else of the node.
  sed 's/^ *//; s/@.*//' "$GH_W/A.links" | sort | tr '\n' ' ' >"$GH_W/A.links.s"
  [ "$(cat "$GH_W/A.links.s")" = "eth0 lo rail0 rail1 " ]
  [ "$(cat "$GH_W/A.host")" = "${GH_P}-nodeA" ]
  # The environment of runc mode: NCCL_*/UCX_*/NIXL_*, DEBUG_ALL's variables, nothing else.
  grep -qx 'NCCL_SOCKET_IFNAME=eth0' "$GH_W/A.env"
  grep -qx 'UCX_TLS=rc' "$GH_W/A.env"
  grep -qx 'NIXL_PLUGIN_DIR=/x' "$GH_W/A.env"
  grep -qx 'NCCL_ALGO=Ring' "$GH_W/A.env"
  grep -qx 'NCCL_DEBUG=INFO' "$GH_W/A.env"
  grep -qx 'NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH' "$GH_W/A.env"
  grep -qx "NCCL_DEBUG_FILE=$GH_W/nccl-debug.${GH_P}-nodeA.%h.%p.log" "$GH_W/A.env"
  grep -qx "NCCL_TOPO_DUMP_FILE=$GH_W/nccl-topo.${GH_P}-nodeA.xml" "$GH_W/A.env"
  grep -qx "GDR_HARNESS_NODE=${GH_P}-nodeA" "$GH_W/A.env"
  refute grep -q '^OTHER_VAR=' "$GH_W/A.env"
  [[ $output == *"debug output costs speed"* ]]
  [[ $output == *"gdrproxy traces the container's device calls into $GH_W/gdrproxy-trace.${GH_P}-nodeA"* ]]
  # The shim prepared podman's bundle: the agent's seccomp listener, no device node of the host.
  grep -qx 'Seccomp:[[:space:]]*2' "$GH_W/A.status"
  refute grep -qE '^(infiniband|nvidia)' "$GH_W/A.dev"
  # After the runs: rails back, containers removed, the agents gone, no state left.
  in_node A ip link show rail1 >/dev/null
  in_node B ip link show rail1 >/dev/null
  refute podman container exists "gdrh-${GH_P}-nodeA"
  refute podman container exists "gdrh-${GH_P}-nodeB"
  [ ! -e "/run/gdr-harness/${GH_P}-nodeA/run" ]
  [ ! -e "/run/gdr-harness/${GH_P}-nodeB/run" ]
  refute pgrep -f "/run/gdr-harness/${GH_P}-node[AB]/run/agent.sock"

  # A run killed with SIGKILL: teardown removes its container and stops its agent.
  st=/run/gdr-harness/${GH_P}-nodeA
  on_node A run -- sleep 128 >"$GH_W/k.out" 2>&1 &
  kpid=$!
  for ((i = 0; i < 300; i++)); do [[ $(podman inspect -f '{{.State.Status}}' "gdrh-${GH_P}-nodeA" 2>/dev/null) == running ]] && break; sleep 0.1; done
  [[ $(podman inspect -f '{{.State.Status}}' "gdrh-${GH_P}-nodeA") == running ]] || { cat "$GH_W/k.out"; false; }
  read -r owner _ <"$st/run/owner"
  read -r agent _ <"$st/run/agent.pid"
  kill -KILL "$owner"
  wait "$kpid" || true
  podman container exists "gdrh-${GH_P}-nodeA"  # the container outlives the harness until teardown
  run on_node A teardown
  echo "$output"
  [ "$status" -eq 0 ]
  [ ! -e "$st" ]
  refute podman container exists "gdrh-${GH_P}-nodeA"
  refute kill -0 "$agent" 2>/dev/null
  refute pgrep -fx "sleep 128"
  run on_node B teardown
  [ "$status" -eq 0 ]
  assert_restored A
  assert_restored B
}

@test "run with one container per rank: ranks of a node share its rails; the last to leave gives them back" {
  export RDMA_IFACES=rail0,rail1
  run on_node A prepare
  [ "$status" -eq 0 ]
  run on_node B prepare
  [ "$status" -eq 0 ]
  cd "$GH_W"
  st=/run/gdr-harness/${GH_P}-nodeA
  # Ranks 0 and 1 on node A (rank 0 in the harness's namespaces, rank 1 in a runc container),
  # rank 2 on node B; rank 0 stays until told, rank 1 pings node B over both rails meanwhile.
  rm -f r0.up r0.stop
  GDR_HARNESS_CONTAINER=rank SLURM_PROCID=0 SLURM_LOCALID=0 timeout 60 bash -c 'on_node A run -- sh -c "$1"' _ \
    'touch r0.up; for i in $(seq 300); do [ -e r0.stop ] && exit 0; sleep 0.1; done; exit 9' >r0.out 2>&1 &
  r0=$!
  wait_for "$GH_W/r0.up" 30 || { cat r0.out; false; }
  # A second run of node A without rank mode is refused while the ranks hold the rails.
  run timeout 30 bash -c 'on_node A run -- true'
  [ "$status" -eq 125 ]
  [[ $output == *"GDR_HARNESS_CONTAINER=rank in every rank"* ]]
  # Rank mode without a rank from the launcher is refused.
  run env GDR_HARNESS_CONTAINER=rank timeout 30 bash -c 'on_node A run -- true'
  [ "$status" -eq 125 ]
  [[ $output == *"needs the launcher's rank"* ]]
  rm -f r2.up r2.stop
  GDR_HARNESS_CONTAINER=rank SLURM_PROCID=2 timeout 60 bash -c 'on_node B run -- sh -c "$1"' _ \
    'touch r2.up; for i in $(seq 300); do [ -e r2.stop ] && exit 0; sleep 0.1; done; exit 9' >r2.out 2>&1 &
  r2=$!
  wait_for "$GH_W/r2.up" 30 || { cat r2.out; false; }
  run env GDR_HARNESS_CONTAINER=rank GDR_HARNESS_RUNTIME=runc SLURM_PROCID=1 SLURM_LOCALID=1 timeout 60 \
    bash -c 'on_node A run -- sh -c "$1"' _ \
    'set -e; echo "rank=$SLURM_PROCID" >r1.env; ip -o link show | cut -d: -f2 >r1.links
     for i in 0 1; do ping -q -I rail$i -c1 -W1 198.51.100.2$i; done'
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"rank 1 joins node ${GH_P}-nodeA's running container network namespace"* ]]
  [[ $output == *"container gdrh-${GH_P}-nodeA-r1 by runc through the runtime shim"* ]]
  [[ $output == *"gdrproxy runtime: $st/run/ctr-rank-1/bundle/config.json: grants []"* ]]
  [[ $output == *"rank 1 leaves; 1 other run(s) of node ${GH_P}-nodeA still hold the rails"* ]]
  grep -qx 'rank=1' r1.env
  [ "$(sed 's/^ *//; s/@.*//' r1.links | sort | tr '\n' ' ')" = "lo rail0 rail1 " ]
  # Rank 1 left: the rails stay with rank 0, its container is gone, the node's agent stays.
  refute in_node A ip link show rail0 >/dev/null 2>&1
  [ ! -e "$st/run/ctr-rank-1" ]
  [ -e "$st/run/owners/rank-0" ]
  read -r agent _ <"$st/run/agent.pid"
  kill -0 "$agent"
  run on_node A status
  [[ $output == *"run: alive"* ]]
  # The last rank leaves: rails back, agent stopped, nothing left.
  touch r0.stop r2.stop
  wait "$r0"
  wait "$r2"
  cat r0.out
  grep -q 'CMD exited with status 0' r0.out
  in_node A ip link show rail0 >/dev/null
  in_node B ip link show rail0 >/dev/null
  [ ! -e "$st/run" ]
  refute kill -0 "$agent" 2>/dev/null
  teardown_both
}

@test "mpirun: an Open MPI ping-pong, one container per rank on each node, PMIx relayed in" {
  command -v mpirun >/dev/null || { echo "mpirun is not installed (scripts/setup.sh installs openmpi-bin)" >&2; false; }
  export RDMA_IFACES=rail0,rail1
  run on_node A prepare
  [ "$status" -eq 0 ]
  run on_node B prepare
  [ "$status" -eq 0 ]
  mpicc -O2 -o "$GH_W/pingpong" "$BATS_TEST_DIRNAME/mpi_pingpong.c"
  # ssh stand-in for mpirun's launcher: the node's address picks its namespaces and host name.
  cat >"$GH_W/node-ssh" <<EOF
#!/bin/bash
while [[ \$1 == -* ]]; do shift; done
case \$1 in 192.0.2.10) n=A ;; 192.0.2.20) n=B ;; *) echo "node-ssh: unknown node \$1" >&2; exit 255 ;; esac
shift
exec nsenter --net="/run/netns/${GH_P}\$n" -- unshare --uts -- sh -c 'hostname "\$0" && exec sh -c "\$1"' "${GH_P}-node\$n" "\$*"
EOF
  chmod +x "$GH_W/node-ssh"
  ip -n "${GH_P}F" addr add 192.0.2.1/24 dev br1
  run nsenter --net="$(ns F)" -- timeout 120 mpirun --allow-run-as-root -np 2 --host 192.0.2.10,192.0.2.20 \
    --mca plm_rsh_agent "$GH_W/node-ssh" --mca btl self,tcp --mca btl_tcp_if_include rail0 --mca pml ob1 \
    --mca oob_tcp_if_include 192.0.2.0/24 -x GDR_HARNESS_CONTAINER=rank -x GDRPROXY -x PATH \
    "$HARNESS" run -- "$GH_W/pingpong"
  ip -n "${GH_P}F" addr del 192.0.2.1/24 dev br1
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"pingpong: 100 round trips, 0 mismatched"* ]]
  [[ $output == *"loopback port(s) (pid "*", PMIx) relayed into the container"* ]]
  grep -qE "rank 0 of 2 on ${GH_P}-nodeA sees: lo rail[01] rail[01] \$" <<<"$output"
  grep -qE "rank 1 of 2 on ${GH_P}-nodeB sees: lo rail[01] rail[01] \$" <<<"$output"
  [ ! -e "/run/gdr-harness/${GH_P}-nodeA/run" ]
  [ ! -e "/run/gdr-harness/${GH_P}-nodeB/run" ]
  teardown_both
}

@test "run: DEBUG_ALL sets NCCL debug variables, the caller's own values win; NCCL_TOPO_FILE gated" {
  run env RDMA_IFACES=rail0 bash -c 'on_node A prepare'
  [ "$status" -eq 0 ]
  dump='env | sort >"$0"'
  run env DEBUG_ALL=1 GDR_HARNESS_LOG_DIR="$GH_W" timeout 30 bash -c 'on_node A run -- bash -c "$1" "$GH_W/d1.env"' _ "$dump"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"debug output costs speed"* ]]
  grep -qx 'NCCL_DEBUG=INFO' "$GH_W/d1.env"
  grep -qx 'NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH' "$GH_W/d1.env"
  grep -qx "NCCL_DEBUG_FILE=$GH_W/nccl-debug.${GH_P}-nodeA.%h.%p.log" "$GH_W/d1.env"
  grep -qx "NCCL_TOPO_DUMP_FILE=$GH_W/nccl-topo.${GH_P}-nodeA.xml" "$GH_W/d1.env"
  # The node's doctor report from prepare is among the debug files.
  [[ $output == *"the node's doctor report (from prepare) is $GH_W/gdrproxy-doctor.${GH_P}-nodeA.json"* ]]
  cmp "/run/gdr-harness/${GH_P}-nodeA/doctor.json" "$GH_W/gdrproxy-doctor.${GH_P}-nodeA.json"

  run env DEBUG_ALL=1 NCCL_DEBUG=WARN NCCL_DEBUG_FILE=/tmp/mine.log timeout 30 bash -c 'on_node A run -- bash -c "$1" "$GH_W/d2.env"' _ "$dump"
  [ "$status" -eq 0 ]
  grep -qx 'NCCL_DEBUG=WARN' "$GH_W/d2.env"
  grep -qx 'NCCL_DEBUG_FILE=/tmp/mine.log' "$GH_W/d2.env"
  grep -qx 'NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH' "$GH_W/d2.env"

  # NCCL_TOPO_FILE: only with INCLUDE_NCCL_TOPO=1 and an existing file, silently dropped otherwise.
  echo '<system/>' >"$GH_W/topo.xml"
  run env NCCL_TOPO_FILE="$GH_W/topo.xml" timeout 30 bash -c 'on_node A run -- bash -c "$1" "$GH_W/t1.env"' _ "$dump"
  [ "$status" -eq 0 ]
  refute grep -q '^NCCL_TOPO_FILE=' "$GH_W/t1.env"
  run env INCLUDE_NCCL_TOPO=1 NCCL_TOPO_FILE="$GH_W/missing.xml" timeout 30 bash -c 'on_node A run -- bash -c "$1" "$GH_W/t2.env"' _ "$dump"
  [ "$status" -eq 0 ]
  refute grep -q '^NCCL_TOPO_FILE=' "$GH_W/t2.env"
  [[ $output != *NCCL_TOPO_FILE* ]]
  run env INCLUDE_NCCL_TOPO=1 NCCL_TOPO_FILE="$GH_W/topo.xml" timeout 30 bash -c 'on_node A run -- bash -c "$1" "$GH_W/t3.env"' _ "$dump"
  [ "$status" -eq 0 ]
  grep -qx "NCCL_TOPO_FILE=$GH_W/topo.xml" "$GH_W/t3.env"

  # CMD's exit status comes back; the rails too.
  run timeout 30 bash -c 'on_node A run -- sh -c "exit 7"'
  [ "$status" -eq 7 ]
  in_node A ip link show rail0 >/dev/null
}

@test "attach: owners killed without detach; the next attach reclaims their state in one line; detach restores the node" {
  export RDMA_IFACES=rail0,rail1
  run on_node A prepare
  [ "$status" -eq 0 ]
  st=/run/gdr-harness/${GH_P}-nodeA
  sleep 300 &
  o1=$!
  run on_node A attach --key step-1.0 --owner "$o1"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"netns=$st/run/netns"* ]]
  refute in_node A ip link show rail0 >/dev/null 2>&1
  # A second key joins while the first owner lives: nothing reclaimed.
  sleep 300 &
  o2=$!
  run on_node A attach --key step-1.1 --owner "$o2"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"step 1.1 joins node ${GH_P}-nodeA's running container network namespace"* ]]
  [[ $output != *reclaimed* ]]
  # Both owners die without a detach: step-1.0's stays a zombie (not reaped yet), step-1.1's pid
  # is made to look reused (a live process, the test's shell, with another start time).
  kill -KILL "$o1" "$o2"
  for ((i = 0; i < 50; i++)); do [[ $(awk '{print $3}' "/proc/$o1/stat" 2>/dev/null) == Z ]] && break; sleep 0.1; done
  wait "$o2" || true
  echo "$$ 1" >"$st/run/owners/step-1.1"
  run on_node A status
  [[ $output == *"run: not alive, but its journal is present"* ]]
  sleep 300 &
  o3=$!
  run on_node A attach --key step-2.0 --owner "$o3"
  echo "$output"
  [ "$status" -eq 0 ]
  # One line says it (the give-back's own lines are not shown), then the attach of a clean node.
  [ "$(grep -c reclaim <<<"$output")" -eq 1 ]
  refute grep -qE 'moved back|journal is present' <<<"$output"
  [[ $output == *"reclaimed node ${GH_P}-nodeA's stale state: every recorded owner is dead (step-1.0 pid $o1, step-1.1 pid $$); rails given back, containers removed, before step-2.0 attaches"* ]]
  [[ $output == *"netns=$st/run/netns"* ]]
  [ "$(ls "$st/run/owners")" = "step-2.0" ]
  refute in_node A ip link show rail0 >/dev/null 2>&1
  wait "$o1" || true
  # The last key's detach gives the rails back: node A as before prepare.
  run on_node A detach --key step-2.0
  echo "$output"
  [ "$status" -eq 0 ]
  kill -KILL "$o3"
  wait "$o3" || true
  [ ! -e "$st/run" ]
  assert_restored A
  run on_node A teardown
  [ "$status" -eq 0 ]
}

# ---------------------------------------------------------------------------------------------
# (4) teardown restores both nodes exactly

@test "teardown: both nodes byte for byte as before, after runs and after a run killed with SIGKILL" {
  export RDMA_IFACES=rail0,rail1,rail2
  run on_node A prepare
  [ "$status" -eq 0 ]
  run on_node B prepare
  [ "$status" -eq 0 ]
  run timeout 30 bash -c 'on_node A run -- true'
  [ "$status" -eq 0 ]
  run on_node A teardown
  echo "$output"
  [ "$status" -eq 0 ]
  run on_node B teardown
  [ "$status" -eq 0 ]
  [ ! -e "/run/gdr-harness/${GH_P}-nodeA" ]
  [ ! -e "/run/gdr-harness/${GH_P}-nodeB" ]
  assert_restored A
  assert_restored B
  # Idempotent.
  run on_node A teardown
  [ "$status" -eq 0 ]
  [[ $output == *"nothing to tear down"* ]]

  # SIGTERM to a running harness: forwarded to CMD, rails given back, 128+15.
  on_node A prepare >/dev/null 2>&1
  st=/run/gdr-harness/${GH_P}-nodeA
  on_node A run -- sleep 60 >"$GH_W/t.out" 2>&1 &
  tpid=$!
  wait_for "$st/run/journal.json" 20 || { cat "$GH_W/t.out"; false; }
  for ((i = 0; i < 100; i++)); do grep -q 'running in the container' "$GH_W/t.out" && break; sleep 0.1; done
  read -r owner _ <"$st/run/owner"
  kill -TERM "$owner"
  rc=0
  wait "$tpid" || rc=$?
  cat "$GH_W/t.out"
  [ "$rc" -eq 143 ]
  grep -q 'SIGTERM: forwarding to CMD' "$GH_W/t.out"
  [ ! -e "$st/run" ]
  in_node A ip link show rail0 >/dev/null
  run on_node A teardown
  [ "$status" -eq 0 ]
  assert_restored A

  # A run killed with SIGKILL: its rails stay in the container until teardown.
  run on_node A prepare
  [ "$status" -eq 0 ]
  st=/run/gdr-harness/${GH_P}-nodeA
  GDR_HARNESS_BOOTSTRAP_ADDR=192.0.2.110/24 on_node A run -- sleep 120 >"$GH_W/k.out" 2>&1 &
  kpid=$!
  wait_for "$st/run/journal.json" 20 || { cat "$GH_W/k.out"; false; }
  for ((i = 0; i < 100; i++)); do grep -q 'running in the container' "$GH_W/k.out" && break; sleep 0.1; done
  run on_node A status
  echo "$output"
  [[ $output == *"run: alive"* ]]
  [[ $output == *"moved rail rail0: in the container"* ]]
  read -r owner _ <"$st/run/owner"
  kill -KILL "$owner"
  wait "$kpid" || true
  run on_node A status
  echo "$output"
  [[ $output == *"not alive, but its journal is present"* ]]
  refute in_node A ip link show rail0 >/dev/null 2>&1
  # prepare and run refuse until teardown.
  run on_node A prepare
  [ "$status" -eq 1 ]
  [[ $output == *"run '"*"teardown' first"* ]]
  run on_node A run -- true
  [ "$status" -eq 125 ]
  run on_node A teardown
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"stopping 1 process(es) left in the container"* ]]
  [ ! -e "$st" ]
  assert_restored A
  assert_restored B
}
