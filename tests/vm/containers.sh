# shellcheck shell=bash
# Two containers under Debian's runc and then crun on real rxe devices, served by one `gdrproxy agent`, sourced
# by tests/vm/run-tests.sh (it needs the helpers of lib.sh). Each container gets its bundle from
# `gdrproxy oci prepare`: its own uverbs node, the device cgroup and the seccomp profile with the
# agent's listener. Its rail is one end of a veth pair, already in the container's own (named,
# pinned) network namespace, carrying an rxe device made there; ibv_rc_pingpong and ib_write_bw
# then run between the containers over RoCE v2, each container's verbs calls traced by the agent
# in that container's trace.
# The one idea: the containers' RDMA traffic uses only their granted devices and their own rails.
# It needs rxe with a UDP tunnel socket per network namespace (mainline since 2025): with one
# socket, in the initial namespace only (Debian 12's 6.1), a QP on a rail in another namespace gets
# no packets and ibv_rc_pingpong's first completion is "local QP operation error". The VM's default
# guest kernel (scripts/vm/guest-kernel.sh) has them; on another kernel this check fails saying so.
# Why the rails are not moved in by prepare's hooks here: on Debian's 6.1 kernel, moving a netdev
# that carries an rxe device into another network namespace unregisters the rxe device (rxe_net.c
# acts on the NETDEV_UNREGISTER a namespace move sends), so the rxe devices are made on the rails
# inside the namespaces, before prepare names their uverbs nodes. Real ports (mlx5) keep their
# RDMA device across the move, which tests/oci/rails_hooks_test.sh covers with veths. The
# synthetic /sys is left out (--no-sysfs): rxe devices hang off no PCI function.

ctr_t0=$(now_ms)
ctr_problems=()
ctr_work=$work/containers
mkdir -p "$ctr_work/traces"
log "containers: namespaces, rails and rxe devices"
grep -q ' rxe_ns_pernet_sk4' /proc/kallsyms ||
  ctr_problems+=("guest kernel $(uname -r): rxe has no UDP socket per network namespace, so containers' rails carry no RoCE (boot the default guest kernel, scripts/vm/guest-kernel.sh)")
timeout 20 ip netns add ctrA && timeout 20 ip netns add ctrB || ctr_problems+=("cannot make the containers' network namespaces")
ip link add ctrvA type veth peer name ctrvB
ip link set ctrvA netns ctrA && ip link set ctrvB netns ctrB || ctr_problems+=("cannot move the rails")
for side in A B; do
  addr=203.0.113.$([[ $side == A ]] && echo 1 || echo 2)
  ip -n ctr$side link set lo up
  ip -n ctr$side addr add $addr/24 dev ctrv$side
  ip -n ctr$side link set ctrv$side up
  timeout 30 ip netns exec ctr$side rdma link add rxe$side type rxe netdev ctrv$side ||
    ctr_problems+=("rxe$side not made on ctrv$side in its namespace")
done
wait_port rxeA ACTIVE && wait_port rxeB ACTIVE || ctr_problems+=("rxeA/rxeB not ACTIVE")
log "containers: rxeA/rxeB $(rdma link show 2>&1 | grep -c rxe[AB]) made; problems so far: ${ctr_problems[*]:-none}"
uvA=$(uverbs_of rxeA) uvB=$(uverbs_of rxeB)
[[ -n $uvA && -n $uvB ]] || ctr_problems+=("no uverbs node for rxeA/rxeB")
if [[ $(stat -f -c %T /sys/fs/cgroup 2>/dev/null) != cgroup2fs ]]; then
  mkdir -p /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup || ctr_problems+=("no cgroup2")
fi
ctr_sock=$ctr_work/agent.sock
cat >"$ctr_work/agent.json" <<JSON
{"version": 1, "containers": [{"match": {"id": "vm-*"}, "grants": ["$uvA", "$uvB", "rdma_cm"],
  "grants_from_metadata": true, "trace": true}]}
JSON
"$gdrproxy" agent --socket "$ctr_sock" --ctl-socket "$ctr_work/agent.ctl" --config "$ctr_work/agent.json" \
  --trace-dir "$ctr_work/traces" >"$ctr_work/agent.log" 2>&1 &
ctr_agent=$!
for ((i = 0; i < 100; i++)); do [[ -S $ctr_sock ]] && break; sleep 0.1; done
log "containers: agent $([[ -S $ctr_sock ]] && echo up || echo DOWN), uverbs $uvA $uvB"

# ctr_bundle NAME IBDEV UVERBS NETNS SCRIPT: the process keeps CAP_MKNOD, so the device cgroup,
# not a missing capability, is what refuses a node of the other container's device.
ctr_bundle() {
  local b=$ctr_work/$1
  mkdir -p "$b/rootfs"
  (cd "$b/rootfs" && mkdir -p usr etc proc dev sys tmp && ln -s usr/bin bin && ln -s usr/lib lib &&
    ln -s usr/lib64 lib64 && ln -s usr/sbin sbin)
  jq -n --arg script "$5" --arg netns "/run/netns/$4" '{
    ociVersion: "1.0.2",
    process: {terminal: false, user: {uid: 0, gid: 0}, cwd: "/", args: ["sh", "-c", $script],
              env: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"], noNewPrivileges: true,
              capabilities: {bounding: ["CAP_MKNOD"], effective: ["CAP_MKNOD"], permitted: ["CAP_MKNOD"]}},
    root: {path: "rootfs", readonly: true},
    mounts: [{destination: "/proc", type: "proc", source: "proc"},
             {destination: "/dev", type: "tmpfs", source: "tmpfs", options: ["nosuid", "mode=755"]},
             {destination: "/tmp", type: "tmpfs", source: "tmpfs", options: ["nosuid"]},
             {destination: "/sys", type: "bind", source: "/sys", options: ["rbind", "ro"]},
             {destination: "/usr", type: "bind", source: "/usr", options: ["rbind", "ro"]},
             {destination: "/etc", type: "bind", source: "/etc", options: ["rbind", "ro"]}],
    linux: {namespaces: [{type: "pid"}, {type: "mount"}, {type: "ipc"}, {type: "uts"},
                         {type: "network", path: $netns}],
            resources: {devices: [{allow: false, access: "rwm"}]}}}' >"$b/config.json"
  "$gdrproxy" oci prepare "$b" --grant "$3" --listener "$ctr_sock" --no-sysfs >"$ctr_work/$1.prepare" 2>&1 ||
    ctr_problems+=("oci prepare $1: $(tail -1 "$ctr_work/$1.prepare")")
}
# Inside: the RoCE v2 GID of the rail's address (the table follows the address the hook re-adds).
gid_of='g=; for i in $(seq 0 15); do [ "$(cat /sys/class/infiniband/IB/ports/1/gid_attrs/types/$i 2>/dev/null)" = "RoCE v2" ] && case $(cat /sys/class/infiniband/IB/ports/1/gids/$i) in *ffff:cb00:71*) g=$i; break;; esac; done'
# The server's attack: a node with the client container's uverbs device number, made and opened.
read -r ctr_major ctr_minor < <(stat -c '%t %T' "/dev/infiniband/$uvB" 2>/dev/null || echo 0 0)
# head's complaint goes to a file and is printed after the status line: busybox's head writes
# "head: " and the rest separately, and the shell's next line could land between them.
other_node="mknod /tmp/other c $((16#$ctr_major)) $((16#$ctr_minor)) && head -c1 /tmp/other 2>/tmp/other.err; echo other-rc=\$?; cat /tmp/other.err 2>/dev/null"
# ctr_run_pair NAME RUNTIME SERVER-CMD CLIENT-CMD PORT [GID-FLAG]
ctr_run_pair() {
  local name=$1 runtime=$2 scmd=$3 ccmd=$4 port=$5 gflag=${6:--g}
  log "containers: $name under $runtime"
  ctr_bundle "vm-$name-s" rxeA "$uvA" ctrA "${gid_of//IB/rxeA}; echo dev: \$(ls /dev/infiniband); $other_node; $scmd $gflag \$g"
  ctr_bundle "vm-$name-c" rxeB "$uvB" ctrB "${gid_of//IB/rxeB}; for i in \$(seq 50); do (echo > /dev/tcp/203.0.113.1/$port) 2>/dev/null && break; sleep 0.2; done 2>/dev/null; sleep 0.5; echo dev: \$(ls /dev/infiniband); $ccmd $gflag \$g 203.0.113.1"
  timeout -k 5 60 "$runtime" --root "$ctr_work/$runtime" run --bundle "$ctr_work/vm-$name-s" "vm-$name-s" >"$ctr_work/$name.s.out" 2>&1 &
  local spid=$!
  timeout -k 5 60 "$runtime" --root "$ctr_work/$runtime" run --bundle "$ctr_work/vm-$name-c" "vm-$name-c" >"$ctr_work/$name.c.out" 2>&1
  local crc=$?
  wait $spid
  local src=$?
  ((crc == 0 && src == 0)) || ctr_problems+=("$name exit $src/$crc: $(tail -2 "$ctr_work/$name.s.out" "$ctr_work/$name.c.out" | tr '\n' ' ' | cut -c1-200)")
  grep -q "^dev: $uvA$" "$ctr_work/$name.s.out" || ctr_problems+=("$name server saw /dev/infiniband: $(grep '^dev:' "$ctr_work/$name.s.out")")
  grep -q "^dev: $uvB$" "$ctr_work/$name.c.out" || ctr_problems+=("$name client saw /dev/infiniband: $(grep '^dev:' "$ctr_work/$name.c.out")")
  grep -q "^other-rc=1$" "$ctr_work/$name.s.out" && grep -q "other.*Operation not permitted" "$ctr_work/$name.s.out" ||
    ctr_problems+=("$name: the server's node of $uvB was not refused: $(grep -i 'other' "$ctr_work/$name.s.out" | tr '\n' ' ')")
  local side
  for side in s c; do
    jq -e -s 'any(.[]; (.call // "") | test("REG_MR"))' "$ctr_work/traces/vm-$name-$side.jsonl" >/dev/null 2>&1 ||
      ctr_problems+=("$name: no REG_MR in vm-$name-$side's trace")
  done
}
if ((${#ctr_problems[@]} == 0)); then
  # Debian's runc, then Debian's crun (the guest's root has CAP_SYS_RESOURCE, which crun needs to
  # load its device program; the build machine's does not).
  ctr_run_pair pingpong runc "ibv_rc_pingpong -d rxeA -n 50" "ibv_rc_pingpong -d rxeB -n 50" 18515
  # perftest's GID index is -x (its -g is multicast).
  ctr_run_pair write_bw runc "ib_write_bw -d rxeA -F -n 50" "ib_write_bw -d rxeB -F -n 50" 18515 -x
  ctr_run_pair pingpong-crun crun "ibv_rc_pingpong -d rxeA -n 50" "ibv_rc_pingpong -d rxeB -n 50" 18515
fi
kill "$ctr_agent" 2>/dev/null
wait "$ctr_agent" 2>/dev/null
if ((${#ctr_problems[@]} == 0)); then
  record runc-crun-containers PASS $(($(now_ms) - ctr_t0)) "2 containers, own netns, rail and uverbs: pingpong and write_bw (runc), pingpong (crun); traced; the other's node refused"
else
  for f in "$ctr_work"/*.out "$ctr_work"/*.prepare "$ctr_work/agent.log"; do [[ -f $f ]] && show "$f" "$(basename "$f")"; done
  record runc-crun-containers FAIL $(($(now_ms) - ctr_t0)) "$(IFS='; '; echo "${ctr_problems[*]}")"
fi
rdma link delete rxeA 2>/dev/null
rdma link delete rxeB 2>/dev/null
ip netns delete ctrA 2>/dev/null
ip netns delete ctrB 2>/dev/null
