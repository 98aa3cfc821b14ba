#!/usr/bin/env bash
# A pod of three through containerd's CRI plugin (Debian 12's containerd 1.6), driven as a kubelet
# drives it, with the runtime handler "gdrproxy" (a RuntimeClass's): RunPodSandbox, an init
# container with no device run to completion, then two app containers whose devices come in
# CreateContainer as a device plugin's Allocate returns them (A: uverbs0, B: uverbs1). The idea
# not to miss: every container of the pod, the sandbox's pause included, goes containerd ->
# containerd-shim-runc-v2 -> gdrproxy-runtime (BinaryName) -> runc, and each app container's
# calls reach `gdrproxy agent` in a session of its own, named by the CRI's container id. Checked:
#   - A and B each see only their node, run calls on it, traced in their own trace, and are
#     refused the other's node (absent from /dev; made by its number, the device cgroup says no);
#   - the init container and the pause container are given no device;
#   - `ctl list` names each app container (CRI id, its bundle under containerd's state);
#   - ExecSync into A: its calls are A's (same session, same trace);
#   - a sidecar with no device handed A's uverbs0 fd over an abstract UNIX socket (the pod's
#     shared network namespace) is refused at its first ioctl on it, in one line naming it;
#   - ContainerStatus, StopContainer, RemoveContainer, StopPodSandbox, RemovePodSandbox succeed
#     and leave no runc state, no session in `ctl list`, no network namespace;
#   - a pod with no handler (the default, runc) is untouched: its bundles have no listener and
#     the agent never hears of it;
#   - a privileged container (securityContext.privileged) asking for a device is refused at
#     StartContainer with the reason and the fix; IPC_LOCK and NET_RAW alone are served; with
#     runtime.json's "accept_unconfined" a SYS_ADMIN container starts, warned and traced.
# Test-rig parts: stand-in device nodes, images built offline (tests/cri/lib.sh), the runtime as a
# link named gdrproxy-runtime to the build's binary, everything under a mktemp directory, in a
# mount and network namespace of the test's own.
# Usage: pod_test.sh GDRPROXY ATTACK_CLIENT   (root, containerd, runc; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
A=$(realpath "$2")
BENCH=$(realpath "$(dirname "$A")/../bench/ioctl_bench")
# shellcheck source=tests/oci/lib.sh
. "$(dirname "$0")/../oci/lib.sh"
# shellcheck source=tests/cri/lib.sh
. "$(dirname "$0")/lib.sh"
cri_require
OCI_ENTER_TIMEOUT=240 oci_enter "$GP" net "$0" "$@"
WORK=$(mktemp -d /tmp/gdrproxy-cri.XXXXXX)
chmod 755 "$WORK"
AGENT_PID=''
cleanup() {
  cri_cleanup
  [[ -n $AGENT_PID ]] && { kill -KILL "$AGENT_PID" && wait "$AGENT_PID"; } 2>/dev/null
  umount -R "$WORK" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
ip link set lo up
fail() {
  echo "FAIL: $*" >&2
  [[ -f $WORK/agent.log ]] && sed 's/^/  [agent] /' "$WORK/agent.log" >&2
  [[ -f $WORK/containerd.log ]] && grep -aiE 'level=(error|warning)' "$WORK/containerd.log" | tail -20 | sed 's/^/  [containerd] /' >&2
  exit 1
}

mkdir -p "$WORK/traces"
oci_start_agent '{"version": 1, "containers": [{"match": {"id": "*"}, "grants": ["uverbs0", "uverbs1"],
  "grants_from_metadata": true, "trace": true}]}' --trace-dir "$WORK/traces"
RT=$WORK/bin/gdrproxy-runtime
mkdir -p "$WORK/bin" && ln -s "$GP" "$RT"
jq -n --arg s "$SOCK" '{version: 1, runtime: "runc", listener: $s, grants: ["uverbs0", "uverbs1"], sysfs: false}' \
  >"$WORK/runtime.json"
cri_containerd "$RT" "$WORK/runtime.json"
cri_images
cri version | jq -e '.runtimeName == "containerd"' >/dev/null || fail "Version does not name containerd"
CRI_CTR_BINDS="$(dirname "$A") $(dirname "$BENCH")"

# ctr_state ID: the container's state as ContainerStatus gives it.
ctr_state() { cri status "$1" | jq -r .state; }
# wait_exited ID: until the container has exited (bounded), then its exit code.
wait_exited() {
  local i
  for i in $(seq 100); do [[ $(ctr_state "$1") == CONTAINER_EXITED ]] && break; sleep 0.1; done
  cri status "$1" | jq -r '.exitCode // 0'
}
# log_has ID REGEX: the container's CRI log (timestamp stream tag line) has a line matching.
log_has() {
  local f i
  f=$(cri status "$1" | jq -r .logPath)
  for i in $(seq 100); do grep -qaE -- "$2" "$f" 2>/dev/null && return 0; sleep 0.1; done
  echo "--- $f:" >&2; cat -v "$f" >&2
  fail "expected /$2/ in $1's log"
}
# session_of ID: the agent's ctl list entry of that container (empty if none).
ctl_list() { "$GP" agent ctl --ctl-socket "$WORK/run/agent.ctl" list; }
session_of() { ctl_list | jq -c --arg id "$1" 'select(.id == $id)'; }
# traced ID NODE: that container's trace's ioctls on NODE.
traced() { jq -s --arg d "$2" '[.[] | select(.device == $d and .syscall == "ioctl")] | length' "$WORK/traces/$1.jsonl" 2>/dev/null || echo 0; }
# traced_at_least ID NODE N: waits (bounded) until that trace holds N ioctls on NODE.
traced_at_least() {
  local i
  for i in $(seq 50); do [[ $(traced "$1" "$2") -ge $3 ]] && return 0; sleep 0.1; done
  return 1
}

# 1. The pod, through the handler.
POD_JSON=$(cri_pod three)
cri_runp "$POD_JSON" gdrproxy
pod=$CRI_POD
cri inspectp "$pod" >"$WORK/pod.status" &&
  jq -e '(.state // "SANDBOX_READY") == "SANDBOX_READY" and .runtimeHandler == "gdrproxy"' "$WORK/pod.status" >/dev/null ||
  { cat "$WORK/pod.status"; fail "the pod is not ready on handler gdrproxy"; }
pod_ip=$(cri inspectp "$pod" | jq -r .network.ip)
[[ $pod_ip == 203.0.113.* ]] || fail "the pod has no address from the test's bridge: $pod_ip"

# 2. The init container: no device, runs to completion.
init=$(cri create "$pod" "$(cri_ctr three init '[]' '["sh", "-c", "echo ib: $(ls /dev/infiniband 2>/dev/null | wc -l) nodes"]')" "$POD_JSON") ||
  fail "CreateContainer init"
cri start "$init" || fail "StartContainer init"
[[ $(wait_exited "$init") == 0 ]] || fail "the init container did not exit 0"
log_has "$init" " ib: 0 nodes$"

# 3. The app containers, A with uverbs0 and B with uverbs1.
app() { # NAME OWN OTHER
  local own=$2 other=$3
  cri_ctr three "$1" "[{\"container_path\": \"/dev/infiniband/uverbs$own\", \"host_path\": \"/dev/infiniband/uverbs$own\", \"permissions\": \"rw\"}]" \
    "$(jq -n --arg s "echo ib: \$(ls /dev/infiniband)
      $BENCH client 3 /dev/infiniband/uverbs$own >/dev/null && echo bench: ok
      $A open /dev/infiniband/uverbs$other rdwr syscall
      mknod /dev/other c 231 $((192 + other)) && head -c1 /dev/other; echo other-rc=\$?
      exec sleep 300" '["sh", "-c", $s]')"
}
declare -A cid
for n in 0 1; do
  name=app$n
  cid[$n]=$(cri create "$pod" "$(app "$name" "$n" $((1 - n)))" "$POD_JSON") || fail "CreateContainer $name"
  cri start "${cid[$n]}" || fail "StartContainer $name"
done
for n in 0 1; do
  c=${cid[$n]}
  log_has "$c" "other-rc="
  log_has "$c" " ib: uverbs$n$"
  log_has "$c" " bench: ok$"
  log_has "$c" " open-syscall ERR ENOENT$"
  log_has "$c" "other.*Operation not permitted"
  log_has "$c" " other-rc=1$"
  [[ $(ctr_state "$c") == CONTAINER_RUNNING ]] || fail "app$n is not running"
  traced_at_least "$c" "uverbs$n" 3 || fail "app$n's uverbs$n ioctls are not in its trace"
  [[ $(traced "$c" "uverbs$((1 - n))") == 0 ]] || fail "app$n's trace has calls on the other node"
  # The bundle containerd wrote, as the shim left it: its listener is the agent's, and the CRI's
  # annotations name the pod and the container.
  jq -e --arg s "$SOCK" --arg n "app$n" '.linux.seccomp.listenerPath == $s and
    .annotations["io.kubernetes.cri.sandbox-name"] == "three" and .annotations["io.kubernetes.cri.container-name"] == $n' \
    "$WORK/ctd/state/io.containerd.runtime.v2.task/k8s.io/$c/config.json" >/dev/null ||
    fail "app$n's config.json has no listener or no CRI names"
  s=$(session_of "$c")
  [[ -n $s ]] || { ctl_list; fail "ctl list does not name app$n ($c)"; }
  jq -e --arg b "/k8s.io/$c" '.bundle | endswith($b)' <<<"$s" >/dev/null || fail "app$n's session names another bundle: $s"
  # ... and its pod and container, as the bundle's CRI annotations name them; the agent's log too.
  jq -e --arg p "$pod" --arg n "app$n" '.pod == {namespace: "gdrproxy-test", name: "three", id: $p} and
    .container == $n and .kind == "container"' <<<"$s" >/dev/null || fail "ctl list does not name app$n's pod and container: $s"
  grep -F "container $c: process" "$WORK/agent.log" | grep -qF " pod gdrproxy-test/three container app$n, rule " || fail "the agent's log does not name app$n's pod and container"
done

cri ps --pod "$pod" | jq -e --arg i "$init" --arg a "${cid[0]}" --arg b "${cid[1]}" \
  '[.containers[] | {(.id): .state}] | add | .[$i] == "CONTAINER_EXITED" and .[$a] == "CONTAINER_RUNNING" and .[$b] == "CONTAINER_RUNNING" and length == 3' \
  >/dev/null || fail "ListContainers does not list the pod's three containers as they are"

# 4. The pause container and the init container: never given a device.
pause_s=$(session_of "$pod")
if [[ -n $pause_s ]]; then
  jq -e '.grants == []' <<<"$pause_s" >/dev/null || fail "the pause container is served with devices: $pause_s"
  jq -e '.kind == "sandbox" and .pod.name == "three" and .pod.namespace == "gdrproxy-test"' <<<"$pause_s" >/dev/null ||
    fail "ctl list does not name the pause container as its pod's sandbox: $pause_s"
fi
[[ ! -s $WORK/traces/$pod.jsonl || $(jq -s '[.[] | select(.device != null and .device != "")] | length' "$WORK/traces/$pod.jsonl") == 0 ]] ||
  fail "the pause container's trace holds device calls"
[[ $(traced "$init" uverbs0) == 0 && $(traced "$init" uverbs1) == 0 ]] || fail "the init container made device calls"

# 5. ExecSync into A: its calls are A's.
before=$(traced "${cid[0]}" uverbs0)
cri exec "${cid[0]}" -- sh -c "$BENCH client 4 /dev/infiniband/uverbs0 >/dev/null && echo exec: ok" >"$WORK/exec.out" 2>&1 ||
  { cat "$WORK/exec.out"; fail "ExecSync into app0"; }
expect "$WORK/exec.out" "^exec: ok$"
cri exec "${cid[0]}" -- sh -c "exit 3" && fail "ExecSync's exit code was not passed on"
traced_at_least "${cid[0]}" uverbs0 $((before + 4)) ||
  fail "ExecSync's calls are not in app0's trace ($before before, $(traced "${cid[0]}" uverbs0) after)"
[[ $(traced "${cid[1]}" uverbs0) == 0 ]] || fail "ExecSync's calls landed in app1's trace"

# 5b. A sidecar with no device, handed app0's uverbs0 fd over a UNIX socket (abstract: a pod's
# containers share its network namespace, so no shared volume is needed): its own session
# refuses the fd at its first ioctl, unread, in one line naming the device.
sock="@gdrproxy-cri-fd-$$"
cri exec "${cid[0]}" -- "$A" sendfd /dev/infiniband/uverbs0 "$sock" >"$WORK/sendfd.out" 2>&1 &
sender=$!
side=$(cri create "$pod" "$(cri_ctr three side '[]' "$(jq -n --arg a "$A" --arg s "$sock" \
  '["sh", "-c", ($a + " recvfd " + $s + " 0xc0181b01; exec sleep 300")]')")" "$POD_JSON") || fail "CreateContainer side"
cri start "$side" || fail "StartContainer side"
log_has "$side" " recvfd (OK|ERR)"
wait "$sender"
expect "$WORK/sendfd.out" "^sendfd OK$"
log_has "$side" " recvfd ERR E"
! grep -q " recvfd OK" "$(cri status "$side" | jq -r .logPath)" || fail "the sidecar ran an ioctl on app0's fd"
expect "$WORK/agent.log" "\[$side\] denied .*uverbs0"
cri stop --grace 1 "$side" && cri rm "$side" || fail "ending the sidecar"

# 6. The pod's end, step by step as a kubelet ends it.
for n in 0 1; do
  cri stop --grace 1 "${cid[$n]}" || fail "StopContainer app$n"
  [[ $(ctr_state "${cid[$n]}") == CONTAINER_EXITED ]] || fail "app$n is not exited after StopContainer"
done
cri stopp "$pod" || fail "StopPodSandbox"
for c in "${cid[@]}" "$init"; do cri rm "$c" || fail "RemoveContainer $c"; done
cri rmp "$pod" || fail "RemovePodSandbox"
for i in $(seq 50); do [[ -z $(ctl_list | jq -r .id | grep -E "^($pod|${cid[0]}|${cid[1]})$") ]] && break; sleep 0.1; done
[[ -z $(ctl_list | jq -r .id | grep -E "^($pod|${cid[0]}|${cid[1]})$") ]] || { ctl_list; fail "the agent still serves the pod's containers"; }
[[ -z $(runc --root "$WORK/runc/k8s.io" list -q 2>/dev/null) ]] || fail "runc keeps state: $(runc --root "$WORK/runc/k8s.io" list -q)"
[[ -z $(ls -A "$WORK/ctd/state/io.containerd.runtime.v2.task/k8s.io" 2>/dev/null) ]] || fail "containerd keeps bundles"
[[ -z $(find "$WORK/ctd/state" -path '*netns*' -type f 2>/dev/null) ]] || fail "a pod network namespace is left"
for n in 0 1; do expect "$WORK/agent.log" "container ${cid[$n]} ended: [1-9][0-9]* ioctl"; done
grep -a "ended:" "$WORK/agent.log" | grep -v -e " 0 denied" -e "$side" && fail "the agent denied calls beyond the sidecar's"

# 7. A pod with no handler: runc, untouched by gdrproxy.
agent_lines=$(wc -l <"$WORK/agent.log")
P2_JSON=$(cri_pod plain)
cri_runp "$P2_JSON"
plain=$CRI_POD
cri inspectp "$plain" | jq -e '(.runtimeHandler // "") | . == "" or . == "runc"' >/dev/null || fail "the plain pod's handler"
pc=$(cri create "$plain" "$(cri_ctr plain app '[{"container_path": "/dev/infiniband/uverbs0", "host_path": "/dev/infiniband/uverbs0", "permissions": "rw"}]' \
  "$(jq -n --arg s "$BENCH client 2 /dev/infiniband/uverbs0 >/dev/null && echo bench: ok; exec sleep 300" '["sh", "-c", $s]')")" "$P2_JSON") ||
  fail "CreateContainer in the plain pod"
cri start "$pc" || fail "StartContainer in the plain pod"
log_has "$pc" " bench: ok$"
for id in "$plain" "$pc"; do
  cfg=$WORK/ctd/state/io.containerd.runtime.v2.task/k8s.io/$id/config.json
  [[ -f $cfg ]] || fail "no bundle for $id"
  jq -e '(.linux.seccomp.listenerPath // "") == ""' "$cfg" >/dev/null || fail "the plain pod's $id has a seccomp listener"
done
[[ -z $(session_of "$pc") && -z $(session_of "$plain") ]] || fail "the agent serves the plain pod"
[[ ! -e $WORK/traces/$pc.jsonl ]] || fail "the plain pod's container has a trace"
cri stopp "$plain" && cri rmp "$plain" || fail "ending the plain pod"
[[ $(sed -n "$((agent_lines + 1)),\$p" "$WORK/agent.log" | grep -c -e "$plain" -e "$pc") == 0 ]] ||
  fail "the agent's log names the plain pod"

# 8. Privileged pods, as a kubelet makes them (securityContext.privileged on the sandbox and the
# container: containerd gives the container every host device, an allow-all device rule and every
# capability): refused at StartContainer with the reason and the fix, the agent never seeing
# it; IPC_LOCK and NET_RAW alone start and are served; with runtime.json's "accept_unconfined" a
# container with CAP_SYS_ADMIN starts, its log and the agent's saying so.
# Test rig: the sandbox's pause, privileged, needs every capability, which runc cannot give
# where this machine's root lacks one: runtime.json's runtime is then runc-bounded (oci_runc_bounded).
jq --arg r "$(oci_runc_bounded "$WORK/bin/runc-bounded")" '.runtime = $r' "$WORK/runtime.json" >"$WORK/rt.new" &&
  mv "$WORK/rt.new" "$WORK/runtime.json" || fail "runtime.json with runc-bounded"
P3_JSON=$(cri_pod priv '{"privileged": true}')
cri_runp "$P3_JSON" gdrproxy
priv=$CRI_POD
# priv_ctr NAME SECURITY_CONTEXT_JSON: a container of the privileged pod asking for uverbs0.
priv_ctr() {
  local f
  f=$(cri_ctr priv "$1" '[{"container_path": "/dev/infiniband/uverbs0", "host_path": "/dev/infiniband/uverbs0", "permissions": "rw"}]' \
    "$(jq -n --arg s "$BENCH client 3 /dev/infiniband/uverbs0 >/dev/null && echo bench: ok; exec sleep 300" '["sh", "-c", $s]')")
  jq --argjson sc "$2" '.linux.security_context += $sc' "$f" >"$f.new" && mv "$f.new" "$f" || fail "priv_ctr $1"
  echo "$f"
}
pc=$(cri create "$priv" "$(priv_ctr privileged '{"privileged": true}')" "$P3_JSON") || fail "CreateContainer privileged"
cri start "$pc" >"$WORK/priv.out" 2>&1 && fail "a privileged container asking for uverbs0 started"
expect "$WORK/priv.out" "the container is privileged \(the device cgroup allows every device.*CAP_SYS_ADMIN.*no user namespace\) and asks for"
expect "$WORK/priv.out" "add CAP_IPC_LOCK for pinned memory"
expect "$WORK/priv.out" "accept_unconfined"
[[ -z $(session_of "$pc") ]] && ! grep -q "$pc" "$WORK/agent.log" || fail "the agent saw the refused privileged container"
ipc=$(cri create "$priv" "$(priv_ctr ipc '{"capabilities": {"add_capabilities": ["IPC_LOCK", "NET_RAW"]}}')" "$P3_JSON") ||
  fail "CreateContainer with IPC_LOCK and NET_RAW"
cri start "$ipc" || fail "a container with IPC_LOCK and NET_RAW alone did not start"
log_has "$ipc" " bench: ok$"
traced_at_least "$ipc" uverbs0 3 || fail "the IPC_LOCK container's calls are not traced"
jq '.accept_unconfined = true' "$WORK/runtime.json" >"$WORK/rt.new" && mv "$WORK/rt.new" "$WORK/runtime.json" ||
  fail "runtime.json accepting unconfined containers"
adm=$(cri create "$priv" "$(priv_ctr admin '{"capabilities": {"add_capabilities": ["SYS_ADMIN"]}}')" "$P3_JSON") ||
  fail "CreateContainer with SYS_ADMIN"
cri start "$adm" || fail "an accepted container with SYS_ADMIN did not start"
log_has "$adm" "gdrproxy runtime: warning: starting a privileged container \(CAP_SYS_ADMIN; no user namespace\) with uverbs0"
log_has "$adm" " bench: ok$"
expect "$WORK/agent.log" "\[$adm\] warning: serving an unconfined container \(CAP_SYS_ADMIN; no user namespace\)"
head -1 "$WORK/traces/$adm.jsonl" | jq -e '.decision == "unconfined"' >/dev/null ||
  fail "the accepted container's trace does not open with the unconfined record"
cri stopp "$priv" && cri rmp "$priv" || fail "ending the privileged pod"
echo "PASS: a pod of three through containerd's CRI with handler gdrproxy: each app container its own node, trace and session, refused the other's; init and pause given nothing; ExecSync traced as its container's; the pod's end leaves nothing; a pod without the handler untouched; a privileged container refused with the reason, IPC_LOCK and NET_RAW served, an accepted one warned and traced"
