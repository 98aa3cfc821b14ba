#!/usr/bin/env bash
# Privileged and capability-heavy containers through Docker (Debian 12's docker.io) and the
# runtime shim. The idea not to miss: `--privileged` reaches the runtime as nothing but its
# effects in config.json (an allow-all device rule, every capability, every host device), and a
# container with those can undo every guard on its devices, so the shim refuses one that asks
# for a guarded device, with one line that says why and what to do, unless runtime.json's
# "accept_unconfined" is true: then it starts with one warning line, the agent says it serves an
# unconfined container and the container's trace opens with a record saying so. Checked:
#   - --privileged with a granted device: refused, the line (through runc's JSON log to the
#     docker CLI) names privilege, the capabilities, the fix (IPC_LOCK) and the runtime.json key;
#     the agent never saw it;
#   - --privileged alone (it asks for every host device, ours among them): refused the same way;
#   - --cap-add SYS_ADMIN, --cap-add SYS_MODULE, --cap-add SYS_RAWIO with a device: refused, each
#     naming its capability;
#   - --cap-add IPC_LOCK --cap-add NET_RAW with a device: served as any container;
#   - a user namespace is not what Docker makes here, so no case relies on one (the unit tests
#     cover it: oci.ContainerPrivilege.*);
#   - "accept_unconfined": true: an allow-all device rule with CAP_SYS_ADMIN starts, is served,
#     and warns once in the container's log (the runtime's line), once in the agent's log, and in
#     the trace's first record.
# Test-rig parts, named as such: stand-in device nodes, an image made offline with `docker
# import` of a busybox rootfs, no network, the vfs storage driver.
# Usage: docker_privileged_test.sh GDRPROXY BENCH_CLIENT   (root, docker.io; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
BENCH=$(realpath "$2")
command -v dockerd >/dev/null && [[ -x /usr/bin/docker ]] ||
  { echo "SKIP: docker.io is not installed (scripts/setup.sh installs it)"; exit 77; }
# shellcheck source=tests/oci/lib.sh
. "$(dirname "$0")/lib.sh"
OCI_ENTER_TIMEOUT=240 oci_enter "$GP" net "$0" "$@"
WORK=$(mktemp -d /tmp/gdrproxy-docker-priv.XXXXXX)
chmod 755 "$WORK"
AGENT_PID='' DOCKERD_PID=''
cleanup() {
  oci_dockerd_stop
  [[ -n $AGENT_PID ]] && kill -KILL "$AGENT_PID" 2>/dev/null
  umount -R "$WORK" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
ip link set lo up
mkdir -p "$WORK/traces"
oci_start_agent '{"version": 1, "containers": [{"match": {"id": "*"}, "grants": ["uverbs0", "uverbs1", "rdma_cm"],
  "grants_from_metadata": true, "trace": true}]}' --trace-dir "$WORK/traces"
RTJ=$WORK/runtime.json
runtime_json() {
  jq -n --arg s "$SOCK" --argjson accept "$1" \
    '{version: 1, listener: $s, grants: ["uverbs*", "rdma_cm", "nvidia*"], sysfs: false, accept_unconfined: $accept}' >"$RTJ"
}
runtime_json false
oci_dockerd "$RTJ"
oci_rootfs "$WORK/skel" "$(dirname "$BENCH")"
tar -C "$WORK/skel/rootfs" -cf "$WORK/skel.tar" . && docker import "$WORK/skel.tar" gdrproxy-priv:1 >/dev/null ||
  fail "docker import failed"
bdir=$(dirname "$BENCH")
run=(docker run --rm --runtime gdrproxy --network none -v /usr/lib:/usr/lib:ro -v /usr/lib64:/usr/lib64:ro
  -v "$bdir:$bdir:ro")

# refused NAME WHAT ARGS...: docker run ARGS fails, and its output names privilege, WHAT and the
# way out; the agent never adopted a container.
refused() {
  local name=$1 what=$2
  shift 2
  local before
  before=$(grep -c "container " "$WORK/agent.log")
  "${run[@]}" "$@" gdrproxy-priv:1 sh -c "$BENCH client 1 /dev/infiniband/uverbs0 >/dev/null && echo bench: ok" \
    >"$WORK/$name.out" 2>&1 && { cat "$WORK/$name.out"; fail "$name: the container started"; }
  expect "$WORK/$name.out" "the container is privileged \($what.*no user namespace\)"
  expect "$WORK/$name.out" "CAP_IPC_LOCK for pinned memory"
  expect "$WORK/$name.out" "accept_unconfined"
  expect "$WORK/$name.out" "not starting the container"
  [[ $(grep -c "container " "$WORK/agent.log") == "$before" ]] || fail "$name: the agent saw the refused container"
}
refused privileged "the device cgroup allows every device.*CAP_SYS_ADMIN; CAP_SYS_MODULE; CAP_SYS_RAWIO; CAP_MKNOD" \
  --privileged --device /dev/infiniband/uverbs0
refused privileged-alone "the device cgroup allows every device.*CAP_SYS_ADMIN" --privileged
refused sys-admin "CAP_SYS_ADMIN;" --cap-add SYS_ADMIN --device /dev/infiniband/uverbs0
refused sys-module "CAP_SYS_MODULE;" --cap-add SYS_MODULE --device /dev/infiniband/uverbs0
refused sys-rawio "CAP_SYS_RAWIO;" --cap-add SYS_RAWIO --device /dev/infiniband/uverbs0

# IPC_LOCK and NET_RAW alone are fine.
"${run[@]}" --cap-add IPC_LOCK --cap-add NET_RAW --device /dev/infiniband/uverbs0 gdrproxy-priv:1 \
  sh -c "$BENCH client 3 /dev/infiniband/uverbs0 >/dev/null && echo bench: ok" >"$WORK/ipc.out" 2>&1 ||
  { cat "$WORK/ipc.out"; fail "IPC_LOCK + NET_RAW: docker run exit $?"; }
expect "$WORK/ipc.out" "^bench: ok$"

# The operator accepts unconfined containers: what --privileged makes (an allow-all device rule,
# CAP_SYS_ADMIN) starts, warned and traced. Not --privileged itself: runc cannot give every
# capability where the host's root lacks some (this machine's lacks CAP_SYS_RESOURCE).
runtime_json true
# The runtime's lines reach the container's own log (as Kubernetes shows them: kubectl logs).
docker run -d --name accepted --runtime gdrproxy --network none -v /usr/lib:/usr/lib:ro -v /usr/lib64:/usr/lib64:ro \
  -v "$bdir:$bdir:ro" --cap-add SYS_ADMIN --device-cgroup-rule 'a *:* rwm' --device /dev/infiniband/uverbs0 gdrproxy-priv:1 \
  sh -c "$BENCH client 3 /dev/infiniband/uverbs0 >/dev/null && echo bench: ok" >/dev/null 2>"$WORK/accepted.err" ||
  { cat "$WORK/accepted.err"; fail "accepted unconfined container: docker run -d failed"; }
docker wait accepted >/dev/null
docker logs accepted >"$WORK/accepted.out" 2>&1
docker rm accepted >/dev/null
expect "$WORK/accepted.out" "^gdrproxy runtime: warning: starting a privileged container \(the device cgroup allows every device.*CAP_SYS_ADMIN.*\) with uverbs0, as $RTJ accepts"
[[ $(grep -c "warning" "$WORK/accepted.out") == 1 ]] || fail "the runtime's warning is not one line"
expect "$WORK/accepted.out" "^bench: ok$"
id=$(sed -n 's/.*\[\([0-9a-f]\{64\}\)\] warning: serving an unconfined container.*/\1/p' "$WORK/agent.log" | head -1)
[[ -n $id ]] || fail "the agent did not warn of the unconfined container"
for i in $(seq 50); do grep -q "container $id ended:" "$WORK/agent.log" && break; sleep 0.1; done
expect "$WORK/agent.log" "warning: serving an unconfined container \(the device cgroup allows every device.*CAP_SYS_ADMIN.*\), accepted by the operator"
[[ $(grep -c "warning: serving an unconfined container" "$WORK/agent.log") == 1 ]] || fail "the agent's warning is not one line"
first=$(head -1 "$WORK/traces/$id.jsonl")
jq -e '.syscall == "start" and .decision == "unconfined" and (.rule | test("accepted by the operator: .*CAP_SYS_ADMIN"))' \
  <<<"$first" >/dev/null || fail "the trace's first record is not the unconfined one: $first"
[[ $(jq -s '[.[] | select(.syscall == "ioctl" and .device == "uverbs0")] | length' "$WORK/traces/$id.jsonl") -ge 3 ]] ||
  fail "the accepted container's calls are not traced"
echo "PASS: privileged and capability-heavy containers refused with the reason and the fix; IPC_LOCK and NET_RAW served; accepted unconfined containers warned and traced"
