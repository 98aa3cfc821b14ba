# shellcheck shell=bash
# shellcheck disable=SC2154 # work, out, gdrproxy, repo: set by lib.sh
# shellcheck disable=SC2015 # `A && B || fail`: fail when either step fails, as intended
# Two Kubernetes-style pods with RoCE between them, started through containerd 1.6's CRI plugin
# with the runtime handler "gdrproxy" (a RuntimeClass's), sourced by tests/vm/run-tests.sh (it
# needs the helpers of lib.sh). tests/cri/lib.sh gives the private containerd (state on the
# guest's tmpfs), its CNI bridge and the images; tests/cri/cri_client.py makes the calls a kubelet
# makes: RunPodSandbox for each pod, then CreateContainer with the pod's own uverbs node as a
# device, as a device plugin's Allocate returns it, and StartContainer. `gdrproxy agent` serves
# both containers; ib_write_bw runs from the client pod to the server pod's address.
# Checked (check cri-pods): the client prints a bandwidth row; each container sees its own uverbs
# node alone; its verbs calls (REG_MR among them) are in its own trace and none on the other's
# node; the agent ends each container's session with no call denied.
# The one idea, networking: CNI's bridge plugin gives each pod an eth0 on one bridge, and the
# test, standing where a RoCE CNI or device plugin stands, makes an rxe device on each pod's eth0
# inside the pod's network namespace (entered through its pause process), so rxe's UDP socket of
# that namespace carries the RoCE v2 traffic across the bridge, beside the containers' TCP
# exchange. The devices exist only once the pods' network does, after RunPodSandbox: the
# runtime's grants name the class (uverbs*, as a node's runtime.json does) and the agent's rule
# takes each container's grants from what its CreateContainer asked for.
# Limits: the kernel's RDMA devices are named in every namespace (shared RDMA netns mode), so
# what keeps a container off the other's device is the grant, the device cgroup and the agent.
# It needs rxe with a UDP socket per network namespace (the default guest kernel). Every wait is
# bounded; the part runs in a subshell whose EXIT trap removes the pods, containerd, its shims,
# the agent and the rxe devices, also after a failure.

cri_t0=$(now_ms)
cri_log=$work/cri.log
(
  # shellcheck source=tests/oci/lib.sh
  . "$repo/tests/oci/lib.sh"
  # shellcheck source=tests/cri/lib.sh
  . "$repo/tests/cri/lib.sh"
  # shellcheck disable=SC2034 # read by tests/oci/lib.sh and tests/cri/lib.sh
  WORK=$work/cri GP=$gdrproxy AGENT_PID='' CRI_WAIT=180
  rm -rf "$WORK"
  mkdir -p "$WORK/traces" "$WORK/tools" "$WORK/bin"
  # shellcheck disable=SC2317 # run by the EXIT trap
  cri_vm_cleanup() {
    local d
    cri_cleanup
    [[ -n $AGENT_PID ]] && kill "$AGENT_PID" 2>/dev/null && wait "$AGENT_PID" 2>/dev/null
    # Gone already with their pods' eth0 (CNI's DEL); deleted here when a pod was not removed.
    for d in rxecA rxecB; do timeout 30 rdma link delete "$d" 2>/dev/null; done
    mkdir -p "$out/cri"
    cp "$WORK"/*.out "$WORK"/*.log "$WORK"/traces/*.jsonl "$out/cri/" 2>/dev/null
    umount -R "$WORK" 2>/dev/null
    rm -rf "$WORK"
  }
  trap cri_vm_cleanup EXIT
  command -v containerd >/dev/null && command -v ctr >/dev/null ||
    fail "containerd is not installed on the host (scripts/setup.sh installs it)"
  /usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null && command -v protoc >/dev/null ||
    fail "the CRI client needs python3-grpcio, python3-protobuf and protobuf-compiler on the host"
  grep -q ' rxe_ns_pernet_sk4' /proc/kallsyms ||
    fail "guest kernel $(uname -r): rxe has no UDP socket per network namespace (boot the default guest kernel)"
  if [[ $(stat -f -c %T /sys/fs/cgroup 2>/dev/null) != cgroup2fs ]]; then
    mount -t cgroup2 none /sys/fs/cgroup || fail "no cgroup2"
  fi
  for m in bridge veth; do timeout 60 modprobe "$m" || fail "modprobe $m"; done

  # ib_write_bw (in $WORK/tools) and libibverbs' provider list, bound read-only into each
  # container at their paths beside the host's /usr/lib (cri_ctr), where its libraries and the
  # rxe provider are.
  cp /usr/bin/ib_write_bw "$WORK/tools/" || fail "no /usr/bin/ib_write_bw (perftest)"
  [[ -f /etc/libibverbs.d/rxe.driver ]] || fail "no /etc/libibverbs.d/rxe.driver"
  export CRI_CTR_BINDS="$WORK/tools /etc/libibverbs.d"

  oci_start_agent '{"version": 1, "containers": [{"match": {"id": "*"}, "grants_from_metadata": true, "trace": true}]}' \
    --trace-dir "$WORK/traces"
  ln -s "$GP" "$WORK/bin/gdrproxy-runtime"
  jq -n --arg s "$SOCK" '{version: 1, runtime: "runc", listener: $s, grants: ["uverbs*"], sysfs: false}' \
    >"$WORK/runtime.json"
  cri_containerd "$WORK/bin/gdrproxy-runtime" "$WORK/runtime.json"
  cri_images
  echo "containerd and images up after $(($(now_ms) - cri_t0)) ms"

  # The pods: RunPodSandbox on handler gdrproxy, CNI's eth0, an rxe device made on it in the
  # pod's namespace (through the pause process, whose pid runc's state names).
  declare -A pod pj pid ip uv gid
  for s in A B; do
    pj[$s]=$(cri_pod "cri-pod$s")
    cri_runp "${pj[$s]}" gdrproxy
    pod[$s]=$CRI_POD
    cri inspectp "${pod[$s]}" >"$WORK/pod$s.status" || fail "PodSandboxStatus cri-pod$s"
    jq -e '.runtimeHandler == "gdrproxy"' "$WORK/pod$s.status" >/dev/null ||
      { cat "$WORK/pod$s.status"; fail "cri-pod$s is not on handler gdrproxy"; }
    ip[$s]=$(jq -r .network.ip "$WORK/pod$s.status")
    [[ ${ip[$s]} == 203.0.113.* ]] || fail "cri-pod$s has no address from the CNI bridge: ${ip[$s]}"
    pid[$s]=$(runc --root "$WORK/runc/k8s.io" state "${pod[$s]}" | jq -r .pid)
    [[ ${pid[$s]} =~ ^[1-9][0-9]*$ ]] || fail "no pause process for cri-pod$s"
    timeout 30 nsenter -t "${pid[$s]}" -n rdma link add "rxec$s" type rxe netdev eth0 ||
      fail "rxec$s not made on cri-pod$s's eth0 in its namespace"
  done
  wait_port rxecA ACTIVE && wait_port rxecB ACTIVE || fail "rxecA/rxecB not ACTIVE"
  # gid_of IBDEV IPV4: the index of the RoCE v2 GID ::ffff:IPV4 (10 s for it to appear).
  gid_of() {
    local i j want o
    IFS=. read -ra o <<<"$2"
    want=$(printf ':ffff:%02x%02x:%02x%02x' "${o[@]}")
    for ((j = 0; j < 100; j++)); do
      for ((i = 0; i < 16; i++)); do
        [[ $(cat "/sys/class/infiniband/$1/ports/1/gid_attrs/types/$i" 2>/dev/null) == "RoCE v2" &&
          $(cat "/sys/class/infiniband/$1/ports/1/gids/$i") == *"$want" ]] && { echo "$i"; return 0; }
      done
      sleep 0.1
    done
    return 1
  }
  for s in A B; do
    uv[$s]=$(uverbs_of "rxec$s") || fail "no uverbs node for rxec$s"
    gid[$s]=$(gid_of "rxec$s" "${ip[$s]}") || fail "no RoCE v2 GID of ${ip[$s]} on rxec$s"
  done
  echo "pods ready after $(($(now_ms) - cri_t0)) ms: cri-podA ${ip[A]} rxecA ${uv[A]} gid ${gid[A]}, cri-podB ${ip[B]} rxecB ${uv[B]} gid ${gid[B]}"

  # The containers: each with its pod's node alone, as a device plugin's Allocate returns it.
  # workload SIDE NAME COMMAND: CreateContainer + StartContainer in cri-podSIDE; prints the id.
  workload() {
    local dev c
    dev=$(jq -n --arg p "/dev/infiniband/${uv[$1]}" '[{container_path: $p, host_path: $p, permissions: "rw"}]')
    c=$(cri create "${pod[$1]}" "$(cri_ctr "cri-pod$1" "$2" "$dev" \
      "$(jq -n --arg s "echo dev: \$(ls /dev/infiniband); $3" '["sh", "-c", $s]')")" "${pj[$1]}") ||
      fail "CreateContainer $2"
    cri start "$c" >&2 || fail "StartContainer $2: $(grep -ai 'level=error' "$WORK/containerd.log" | tail -3)"
    echo "$c"
  }
  # wait_exit ID NAME: until the container has exited (120 s), its log in $WORK/NAME.out (the
  # CRI log's lines without their timestamp and stream words); fails unless it exited 0.
  wait_exit() {
    local st="" end=$((SECONDS + 120))
    while ((SECONDS < end)); do
      st=$(cri status "$1") && [[ $(jq -r .state <<<"$st") == CONTAINER_EXITED ]] && break
      sleep 0.5
    done
    sed -E 's/^[^ ]+ [^ ]+ [^ ]+ //' "$(jq -r .logPath <<<"$st")" >"$WORK/$2.out" 2>/dev/null
    echo "$2: $(jq -r '.state + " exit " + ((.exitCode // 0) | tostring)' <<<"$st")"
    [[ $(jq -r .state <<<"$st") == CONTAINER_EXITED && $(jq -r '.exitCode // 0' <<<"$st") == 0 ]] ||
      { cat "$WORK/$2.out"; fail "$2 did not exit 0"; }
  }
  server=$(workload A server "$WORK/tools/ib_write_bw -d rxecA -x ${gid[A]} -F -n 50") || exit 1
  end=$((SECONDS + 90))
  while ((SECONDS < end)); do
    [[ -n $(nsenter -t "${pid[A]}" -n ss -Hltn 'sport = :18515' 2>/dev/null) ]] && break
    [[ $(cri status "$server" | jq -r .state) == CONTAINER_RUNNING ]] || break
    sleep 0.3
  done
  client=$(workload B client "$WORK/tools/ib_write_bw -d rxecB -x ${gid[B]} -F -n 50 ${ip[A]}") || exit 1
  wait_exit "$client" client
  wait_exit "$server" server
  bw=$(awk '$1 == 65536 && $2 == 50 && $4 ~ /^[0-9.]+$/ { print $4 }' "$WORK/client.out")
  [[ -n $bw ]] || { cat "$WORK/client.out"; fail "ib_write_bw printed no bandwidth row"; }

  # Each container's calls: in its own trace, on its own node; its session ended cleanly.
  for s in server:A:B client:B:A; do
    IFS=: read -r c own other <<<"$s"
    id=${!c}
    expect "$WORK/$c.out" "^dev: ${uv[$own]}$"
    cri rm "$id" || fail "RemoveContainer $c"
    for ((i = 0; i < 100; i++)); do grep -q "container $id ended" "$WORK/agent.log" && break; sleep 0.1; done
    expect "$WORK/agent.log" "container $id ended: [1-9][0-9]* ioctl, [0-9]+ open, 0 denied"
    t=$WORK/traces/$id.jsonl
    jq -e -s --arg d "${uv[$own]}" 'any(.[]; .device == $d and ((.call // "") | test("REG_MR")))' "$t" >/dev/null ||
      fail "$c's trace has no REG_MR on ${uv[$own]}"
    n=$(jq -s --arg d "${uv[$other]}" '[.[] | select(.device == $d)] | length' "$t")
    [[ $n == 0 ]] || fail "$c's trace has $n records on the other pod's ${uv[$other]}"
    echo "$c: $(jq -s 'length' "$t") records in its trace, all on ${uv[$own]}"
  done
  for s in A B; do
    cri stopp "${pod[$s]}" && cri rmp "${pod[$s]}" || fail "ending cri-pod$s"
  done
  echo "PASS: ib_write_bw $bw MB/s from cri-podB (${uv[B]}) to cri-podA (${uv[A]})"
) >"$cri_log" 2>&1
cri_rc=$?
if ((cri_rc == 0)) && grep -q '^PASS: ' "$cri_log"; then
  record cri-pods PASS $(($(now_ms) - cri_t0)) "containerd CRI, handler gdrproxy, CNI bridge, 2 pods' own rxe on eth0: $(sed -n 's/^PASS: //p' "$cri_log"); traced apart"
else
  tail -60 "$cri_log" | sed 's/^/    [cri] /'
  record cri-pods FAIL $(($(now_ms) - cri_t0)) "$(grep '^FAIL: ' "$cri_log" | tail -1 | cut -c7-200)${cri_rc:+ (exit $cri_rc)}"
fi
cp "$cri_log" "$out/" 2>/dev/null
