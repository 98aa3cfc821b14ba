# shellcheck shell=bash
# shellcheck disable=SC2154 # work, out, gdrproxy, repo: set by lib.sh
# shellcheck disable=SC2015 # `A && B || fail`: fail when either step fails, as intended
# Two Docker containers with RoCE between them through the agent, sourced by tests/vm/run-tests.sh
# (it needs the helpers of lib.sh). Debian 12's docker.io of this machine's root (dockerd 20.10,
# the containerd it starts, containerd-shim-runc-v2) runs in the guest with its state on tmpfs,
# set up as tests/oci/docker_test.sh sets it up (tests/oci/lib.sh: the daemon.json `runtimes`
# entry naming the gdrproxy-runtime link, the vfs driver, no bridge, an image made offline with
# `docker import`). `docker run --runtime gdrproxy --device /dev/infiniband/uverbsN` starts each
# container through the shim, `gdrproxy agent` serves both, and ib_write_bw runs between them.
# Checked (check docker-containers): the client prints a bandwidth row; each container sees its
# own uverbs node alone, its verbs calls (REG_MR among them) are in its own trace and none on the
# other's node; each makes a node of the other's device by its number (Docker's CAP_MKNOD) and
# opening it is refused by the device cgroup.
# The one idea, networking: each container joins (`--network container:`) the network namespace of
# a "pod" container started first with `--network none`, as Kubernetes' containers join their
# pause container's: the test, standing where a CNI plugin stands, moves one end of a veth pair
# into the pod's namespace, gives it an address and makes the rxe device on it there. The device
# is made after the move because rxe unregisters its device when its netdev changes namespace
# (containers.sh says more), and before the workload container, whose --device must name its
# uverbs node. The containers' out-of-band TCP exchange and their RoCE v2 traffic both cross
# that veth; nothing is shared with the guest's own namespace (`--network host` would be).
# Limits: Docker's own network drivers are not used (the wiring is the test's), the pod
# containers run under plain runc, and the kernel's RDMA devices are named in every namespace
# (shared RDMA netns mode), so what keeps a container off the other's device is the grant, the
# device cgroup and the agent, not the namespace. The guest has no apparmor_parser to load
# Docker's docker-default profile, so the containers run with `--security-opt
# apparmor=unconfined` (Docker's seccomp profile stays, as tests/oci/docker_test.sh checks). It
# needs rxe with a UDP socket per network namespace (the default guest kernel) and the kernel's
# shared RDMA netns mode, to find the devices' uverbs nodes from the guest's own namespace.
# Every wait is bounded; the part runs in a subshell whose EXIT trap removes the containers,
# dockerd, containerd, the agent, the namespaces and the rxe devices, also after a failure.

dk_t0=$(now_ms)
dk_log=$work/docker.log
(
  # shellcheck source=tests/oci/lib.sh
  . "$repo/tests/oci/lib.sh"
  # shellcheck disable=SC2034 # read by tests/oci/lib.sh
  WORK=$work/docker GP=$gdrproxy AGENT_PID='' DOCKERD_PID=
  # shellcheck disable=SC2034 # read by tests/oci/lib.sh: emulated, dockerd takes a while
  OCI_DOCKERD_WAIT=120 OCI_DOCKER_TIMEOUT=90
  rm -rf "$WORK"
  mkdir -p "$WORK/traces"
  # shellcheck disable=SC2317 # run by the EXIT trap
  dk_cleanup() {
    local d
    for d in rxedkA rxedkB; do rdma link delete "$d" 2>/dev/null; done
    oci_dockerd_stop
    [[ -n $AGENT_PID ]] && kill "$AGENT_PID" 2>/dev/null && wait "$AGENT_PID" 2>/dev/null
    for d in A B; do
      ip netns delete "dk$d" 2>/dev/null
      ip link delete "dkv$d" 2>/dev/null
    done
    mkdir -p "$out/docker"
    cp "$WORK"/*.out "$WORK"/*.log "$WORK"/traces/*.jsonl "$out/docker/" 2>/dev/null
    umount -R "$WORK" 2>/dev/null
    rm -rf "$WORK"
  }
  trap dk_cleanup EXIT
  command -v dockerd >/dev/null && [[ -x /usr/bin/docker ]] ||
    fail "docker.io is not installed on the host (scripts/setup.sh installs it)"
  grep -q ' rxe_ns_pernet_sk4' /proc/kallsyms ||
    fail "guest kernel $(uname -r): rxe has no UDP socket per network namespace (boot the default guest kernel)"
  if [[ $(stat -f -c %T /sys/fs/cgroup 2>/dev/null) != cgroup2fs ]]; then
    mount -t cgroup2 none /sys/fs/cgroup || fail "no cgroup2"
  fi

  # The image: busybox (tests/oci/lib.sh) and ib_write_bw with its libraries and libibverbs' rxe
  # provider, copied from this root at their paths.
  oci_rootfs "$WORK/skel"
  root=$WORK/skel/rootfs
  prov=$(dirname "$(readlink -f /usr/lib/x86_64-linux-gnu/libibverbs.so.1)")/libibverbs/librxe-rdmav34.so
  for f in /usr/bin/ib_write_bw "$prov"; do
    for l in "$f" $(ldd "$f" | grep -o '/[^ ]*'); do
      mkdir -p "$root$(dirname "$l")" && cp -L "$l" "$root$l" || fail "cannot copy $l into the image"
    done
  done
  mkdir -p "$root/etc/libibverbs.d" && cp /etc/libibverbs.d/rxe.driver "$root/etc/libibverbs.d/" ||
    fail "no /etc/libibverbs.d/rxe.driver"

  oci_dockerd "$WORK/runtime.json"
  echo "dockerd up after $(($(now_ms) - dk_t0)) ms"
  tar -C "$root" -cf "$WORK/skel.tar" . && docker import "$WORK/skel.tar" gdrproxy-vm:1 >/dev/null ||
    fail "docker import failed"
  opts=(--security-opt apparmor=unconfined)

  # The pods: a namespace each, a veth end with its address moved in, an rxe device made there.
  ip link add dkvA type veth peer name dkvB || fail "cannot make the veth pair"
  for s in A B; do
    docker run -d --name "dk-pod$s" --network none "${opts[@]}" gdrproxy-vm:1 sleep 600 >/dev/null ||
      fail "docker run dk-pod$s: $(tail -3 "$WORK/dockerd.log")"
    pid=$(docker inspect -f '{{.State.Pid}}' "dk-pod$s")
    ip netns attach "dk$s" "$pid" && ip link set "dkv$s" netns "dk$s" || fail "cannot move dkv$s into dk-pod$s"
    ip -n "dk$s" addr add "203.0.113.1$([[ $s == A ]] && echo 1 || echo 2)/24" dev "dkv$s"
    ip -n "dk$s" link set "dkv$s" up
    timeout 30 ip netns exec "dk$s" rdma link add "rxedk$s" type rxe netdev "dkv$s" ||
      fail "rxedk$s not made on dkv$s in dk-pod$s's namespace"
  done
  wait_port rxedkA ACTIVE && wait_port rxedkB ACTIVE || fail "rxedkA/rxedkB not ACTIVE"
  uvA=$(uverbs_of rxedkA) uvB=$(uverbs_of rxedkB)
  [[ -n $uvA && -n $uvB ]] || fail "no uverbs node for rxedkA/rxedkB"
  # gid_of IBDEV ADDR-HEX: the index of the RoCE v2 GID ::ffff:ADDR (10 s for it to appear).
  gid_of() {
    local i j
    for ((j = 0; j < 100; j++)); do
      for ((i = 0; i < 16; i++)); do
        [[ $(cat "/sys/class/infiniband/$1/ports/1/gid_attrs/types/$i" 2>/dev/null) == "RoCE v2" &&
          $(cat "/sys/class/infiniband/$1/ports/1/gids/$i") == *":ffff:$2" ]] && { echo "$i"; return 0; }
      done
      sleep 0.1
    done
    return 1
  }
  gA=$(gid_of rxedkA cb00:710b) && gB=$(gid_of rxedkB cb00:710c) || fail "no RoCE v2 GID of the rails' addresses"

  oci_start_agent "{\"version\": 1, \"containers\": [{\"match\": {\"id\": \"*\"}, \"grants\": [\"$uvA\", \"$uvB\"],
    \"grants_from_metadata\": true, \"trace\": true}]}" --trace-dir "$WORK/traces"
  jq -n --arg s "$SOCK" --arg a "$uvA" --arg b "$uvB" \
    '{version: 1, runtime: "runc", listener: $s, grants: [$a, $b], sysfs: false}' >"$WORK/runtime.json"
  echo "pods, rails and agent ready after $(($(now_ms) - dk_t0)) ms: rxedkA $uvA gid $gA, rxedkB $uvB gid $gB"

  # Each workload makes a node with the other's device number and opens it, then runs ib_write_bw.
  # other_node UVERBS: the shell words that make and open a node of UVERBS's device number.
  other_node() {
    echo "mknod /dev/other c $(stat -c '%Hr %Lr' "/dev/infiniband/$1") && head -c1 /dev/other 2>/tmp/other.err;
      echo other-rc=\$?; cat /tmp/other.err; echo dev: \$(ls /dev/infiniband)"
  }
  docker run -d --name dk-server --runtime gdrproxy --network container:dk-podA "${opts[@]}" \
    --device "/dev/infiniband/$uvA" gdrproxy-vm:1 sh -c "$(other_node "$uvB")
      ib_write_bw -d rxedkA -x $gA -F -n 50" >/dev/null || fail "docker run dk-server: $(tail -3 "$WORK/dockerd.log")"
  for ((i = 0; i < 600; i++)); do
    [[ -n $(ip netns exec dkA ss -Hltn 'sport = :18515' 2>/dev/null) ]] && break
    [[ $(docker inspect -f '{{.State.Running}}' dk-server) == true ]] || break
    sleep 0.1
  done
  docker run -d --name dk-client --runtime gdrproxy --network container:dk-podB "${opts[@]}" \
    --device "/dev/infiniband/$uvB" gdrproxy-vm:1 sh -c "$(other_node "$uvA")
      ib_write_bw -d rxedkB -x $gB -F -n 50 203.0.113.11" >/dev/null || fail "docker run dk-client"
  for c in client server; do
    rc=$(docker wait "dk-$c")
    docker logs "dk-$c" >"$WORK/$c.out" 2>&1
    echo "dk-$c exit ${rc:-none}"
    [[ $rc == 0 ]] || { cat "$WORK/$c.out"; fail "dk-$c exit ${rc:-none}"; }
  done
  bw=$(awk '$1 == 65536 && $2 == 50 && $4 ~ /^[0-9.]+$/ { print $4 }' "$WORK/client.out")
  [[ -n $bw ]] || { cat "$WORK/client.out"; fail "ib_write_bw printed no bandwidth row"; }
  for s in server:A:B client:B:A; do
    IFS=: read -r c own other <<<"$s"
    uvown=uv$own uvother=uv$other
    expect "$WORK/$c.out" "^dev: ${!uvown}$"
    expect "$WORK/$c.out" "^other-rc=1$"
    expect "$WORK/$c.out" "other.*Operation not permitted"
    id=$(docker inspect -f '{{.Id}}' "dk-$c")
    docker rm "dk-$c" >/dev/null
    for ((i = 0; i < 100; i++)); do grep -q "container $id ended" "$WORK/agent.log" && break; sleep 0.1; done
    expect "$WORK/agent.log" "container $id ended: [1-9][0-9]* ioctl, [0-9]+ open, 0 denied"
    t=$WORK/traces/$id.jsonl
    jq -e -s --arg d "${!uvown}" 'any(.[]; .device == $d and ((.call // "") | test("REG_MR")))' "$t" >/dev/null ||
      fail "dk-$c's trace has no REG_MR on ${!uvown}"
    n=$(jq -s --arg d "${!uvother}" '[.[] | select(.device == $d)] | length' "$t")
    [[ $n == 0 ]] || fail "dk-$c's trace has $n records on the other container's ${!uvother}"
    echo "dk-$c: $(jq -s 'length' "$t") records in its trace, all on ${!uvown}"
  done
  echo "PASS: ib_write_bw $bw MB/s between dk-server ($uvA) and dk-client ($uvB)"
) >"$dk_log" 2>&1
dk_rc=$?
if ((dk_rc == 0)) && grep -q '^PASS: ' "$dk_log"; then
  record docker-containers PASS $(($(now_ms) - dk_t0)) "dockerd+containerd+shim, 2 pods' own rails: $(sed -n 's/^PASS: //p' "$dk_log"); traced apart; the other's node refused"
else
  sed -n '1,200p' "$dk_log" | tail -60 | sed 's/^/    [docker] /'
  record docker-containers FAIL $(($(now_ms) - dk_t0)) "$(grep '^FAIL: ' "$dk_log" | tail -1 | cut -c7-200)${dk_rc:+ (exit $dk_rc)}"
fi
cp "$dk_log" "$out/" 2>/dev/null
