#!/usr/bin/env bash
# Rails in a pod through containerd's CRI with the runtime handler "gdrproxy": runtime.json's
# "rails": true moves the netdevs of a container's NIC (uverbs0's device: two veth rails in a
# constructed sysfs) into the pod's network namespace, the one CNI set up and every container of
# the pod shares, by the shim while runc creates the container (the pod's bundle names that
# namespace: proxy/oci/early_rails.h); the poststop hook the shim writes gives them back
# when that container's runtime state is deleted. The idea not to miss: the "host" is a network
# namespace of the test's own, and once the pod is removed its addresses, routes, rules and the
# rails' sysctls must read back as before and the hooks' state directory hold nothing, also when
# the pod lived through one of (CASE):
#   plain               nothing else: the rails go in once, are seen from the pod, come back
#                       with the container holding them, go in again with its next attempt;
#   agent_killed        `kill -9` of the agent mid-pod, a new one on the same --fd-store: the
#                       container's calls (ExecSync) are served and traced again, as its own,
#                       after those traced before the kill (its trace is added to, not restarted);
#   containerd_killed   `kill -9` of containerd mid-pod (its shims keep the containers), started
#                       again on the same root and state, as a node's restart: the CRI still
#                       knows the pod, ExecSync is served, the pod's end gives the rails back.
# Test-rig parts: stand-in device nodes, veth rails in a constructed sysfs (allow_plain_rails:
# a veth backs no RDMA device), images built offline (tests/cri/lib.sh).
# Usage: rails_test.sh GDRPROXY ATTACK_CLIENT CASE   (root, containerd, runc; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
A=$(realpath "$2")
CASE=$3
BENCH=$(realpath "$(dirname "$A")/../bench/ioctl_bench")
case $CASE in plain | agent_killed | containerd_killed) ;; *) echo "rails_test.sh: no case $CASE" >&2; exit 2 ;; esac
# shellcheck source=tests/oci/lib.sh
. "$(dirname "$0")/../oci/lib.sh"
# shellcheck source=tests/cri/lib.sh
. "$(dirname "$0")/lib.sh"
cri_require
OCI_ENTER_TIMEOUT=240 oci_enter "$GP" net "$0" "$@"
WORK=$(mktemp -d /tmp/gdrproxy-cri-rails.XXXXXX)
chmod 755 "$WORK"
AGENT_PID=''
STORE=$WORK/run/fds.sock
cleanup() {
  cri_cleanup
  [[ -n $AGENT_PID ]] && { kill -KILL "$AGENT_PID" && wait "$AGENT_PID"; } 2>/dev/null
  # The fd-store holder the agent started (named by this run's store path), with the listeners
  # it keeps.
  local p
  for p in $(pgrep -f -- "--fd-store $STORE"); do kill -KILL "$p"; done 2>/dev/null
  umount -R "$WORK" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  cat "$WORK"/agent*.log 2>/dev/null | sed 's/^/  [agent] /' >&2
  [[ -f $WORK/containerd.log ]] && grep -aiE 'level=(error|warning)' "$WORK/containerd.log" | grep -v memory.events |
    tail -20 | sed 's/^/  [containerd] /' >&2
  exit 1
}
ip link set lo up

# The host's rails and their NIC's sysfs, and the host's network as it is before any pod. The
# host forwards IPv4, as a Kubernetes node must (CNI's bridge turns it on for its gateway; a link
# that comes back takes the namespace's setting).
sysctl -qw net.ipv4.ip_forward=1 || fail "cannot turn on forwarding in the test's namespace"
oci_veth_rails
d=$WORK/rsys/class/infiniband/rxe_rails
mkdir -p "$d/ports/1" "$d/device/infiniband_verbs/uverbs0" "$d/device/net/rail0" "$d/device/net/rail1"
host_net() {
  local i
  for i in $(seq 50); do [[ -z $(ip -6 addr show tentative) ]] && break; sleep 0.1; done
  # Not the bridge CNI made for the pods (up while a pod has an address on it), nor its routes.
  ip -d addr show | awk -v br="gpc$$" '/^[0-9]+: / { skip = ($2 ~ "^" br "[:@]" || $2 ~ /^veth/) } !skip'
  ip route show table all | grep -v -e "gpc$$" -e "dev veth" -e 203.0.113 | sort
  ip rule show
  sysctl -a 2>/dev/null | grep -E '\.rail[01]\.' | sort
}
host_net >"$WORK/net.before"
STATE=$WORK/run/rails
rails_back() {
  host_net >"$WORK/net.after"
  diff -u "$WORK/net.before" "$WORK/net.after" || fail "after $1, the host's network differs from before"
  [[ -z $(ls -A "$STATE" 2>/dev/null) ]] || fail "after $1, the rail state directory holds: $(ls -A "$STATE")"
}

mkdir -p "$WORK/traces"
AGENT_CONFIG='{"version": 1, "containers": [{"match": {"id": "*"}, "grants": ["uverbs0", "uverbs1"],
  "grants_from_metadata": true, "trace": true}]}'
oci_start_agent "$AGENT_CONFIG" --trace-dir "$WORK/traces" --fd-store "$STORE"
RT=$WORK/bin/gdrproxy-runtime
mkdir -p "$WORK/bin" && ln -s "$GP" "$RT"
jq -n --arg s "$SOCK" --arg sys "$WORK/rsys" --arg st "$STATE" '{version: 1, runtime: "runc", listener: $s,
  grants: ["uverbs0", "uverbs1"], sysfs: false, rails: true, sysfs_root: $sys, allow_plain_rails: true,
  rail_state_dir: $st}' >"$WORK/runtime.json"
cri_containerd "$RT" "$WORK/runtime.json"
cri_images
CRI_CTR_BINDS="$(dirname "$BENCH")"

traced() { jq -s --arg d "$2" '[.[] | select(.device == $d and .syscall == "ioctl")] | length' "$WORK/traces/$1.jsonl" 2>/dev/null || echo 0; }
# in_pod ID: the IPv4 addresses the container sees (its pod's network namespace).
in_pod() { cri exec "$1" -- ip -o -4 addr show; }

POD_JSON=$(cri_pod railed)
cri_runp "$POD_JSON" gdrproxy
pod=$CRI_POD
[[ -z $(ls -A "$STATE" 2>/dev/null) ]] || fail "the pause container (no device) was given rails"
ip link show rail0 >/dev/null 2>&1 || fail "the pod's sandbox took rail0"
dev0='[{"container_path": "/dev/infiniband/uverbs0", "host_path": "/dev/infiniband/uverbs0", "permissions": "rw"}]'
dev1='[{"container_path": "/dev/infiniband/uverbs1", "host_path": "/dev/infiniband/uverbs1", "permissions": "rw"}]'
ca=$(cri create "$pod" "$(cri_ctr railed nic "$dev0" '["sleep", "300"]')" "$POD_JSON") ||
  fail "CreateContainer nic"
cri start "$ca" || fail "StartContainer nic"
cb=$(cri create "$pod" "$(cri_ctr railed other "$dev1" '["sleep", "300"]')" "$POD_JSON") || fail "CreateContainer other"
cri start "$cb" || fail "StartContainer other"

# The rails are in the pod's namespace, configured, once (one journal), and not on the host;
# the other container shares the pod's namespace, so it sees them too.
in_pod "$ca" >"$WORK/a.addr" 2>&1 || { cat "$WORK/a.addr"; fail "ExecSync ip in nic"; }
expect "$WORK/a.addr" "rail0 +inet 198\.51\.100\.10/24"
expect "$WORK/a.addr" "rail1 +inet 198\.51\.100\.11/24"
expect "$WORK/a.addr" "eth0 +inet 203\.0\.113\."
in_pod "$cb" >"$WORK/b.addr" 2>&1
expect "$WORK/b.addr" "rail0 +inet 198\.51\.100\.10/24"
ip link show rail0 >/dev/null 2>&1 && fail "rail0 is still on the host while the pod runs"
[[ $(ls "$STATE" | wc -l) == 1 ]] || fail "the rail state directory holds: $(ls "$STATE")"
# The pod's bundle names its network namespace: the shim moved the rails while runc created the
# container, and its start waited for them (proxy/oci/early_rails.h).
[[ $(cat "$STATE"/*/early-move 2>/dev/null) == ok ]] || fail "the rails were not moved at the container's create"

# served ID NODE WHEN: an ExecSync device call in that container, traced as its own.
served() {
  local before i
  before=$(traced "$1" "$2")
  cri exec "$1" -- sh -c "$BENCH client 2 /dev/infiniband/$2 >/dev/null && echo bench: ok" >"$WORK/exec.out" 2>&1
  expect "$WORK/exec.out" "^bench: ok$"
  for i in $(seq 50); do [[ $(traced "$1" "$2") -ge $((before + 2)) ]] && break; sleep 0.1; done
  [[ $(traced "$1" "$2") -ge $((before + 2)) ]] || fail "after $3, the container's calls are not in its trace"
}
served "$ca" uverbs0 "the pod's start"

case $CASE in
  agent_killed)
    kill -KILL "$AGENT_PID"
    wait "$AGENT_PID" 2>/dev/null
    mv "$WORK/agent.log" "$WORK/agent.1.log"
    # What the killed agent traced of each container: still the start of its trace once the next
    # agent has re-attached it (the re-attached session adds to the file).
    for c in "$ca" "$cb"; do cp "$WORK/traces/$c.jsonl" "$WORK/$c.before-kill.jsonl"; done
    [[ $(traced "$ca" uverbs0) -ge 2 ]] || fail "before the agent's kill, nic's calls are not in its trace"
    oci_start_agent "$AGENT_CONFIG" --trace-dir "$WORK/traces" --fd-store "$STORE"
    # The holder kept the runtime socket: the new agent serves once its log says so.
    for i in $(seq 100); do grep -q "gdrproxy agent: serving" "$WORK/agent.log" && break; sleep 0.05; done
    expect "$WORK/agent.log" "fd store .*: [1-9][0-9]* process\(es\) kept"
    # Each container re-attached (its session opens its trace then): the calls traced before the
    # kill are still there, the file's start as it was.
    for c in "$ca" "$cb"; do
      for i in $(seq 100); do grep -q "container $c: re-attached" "$WORK/agent.log" && break; sleep 0.05; done
      expect "$WORK/agent.log" "container $c: re-attached from the fd store"
      cmp -s -n "$(stat -c %s "$WORK/$c.before-kill.jsonl")" "$WORK/$c.before-kill.jsonl" "$WORK/traces/$c.jsonl" ||
        fail "after the agent's restart, $c's trace lost what was traced before the kill"
    done
    [[ $(traced "$ca" uverbs0) -ge 2 ]] || fail "after the agent's restart, nic's calls from before the kill are not in its trace"
    served "$ca" uverbs0 "the agent's restart"
    served "$cb" uverbs1 "the agent's restart"
    in_pod "$ca" >"$WORK/a2.addr" 2>&1
    expect "$WORK/a2.addr" "rail0 +inet 198\.51\.100\.10/24"
    ;;
  containerd_killed)
    kill -KILL "$CTD_PID"
    wait "$CTD_PID" 2>/dev/null
    cri_containerd "$RT" "$WORK/runtime.json"
    for c in "$ca" "$cb"; do
      [[ $(cri status "$c" | jq -r .state) == CONTAINER_RUNNING ]] || fail "after containerd's restart, $c is not running"
    done
    cri inspectp "$pod" | jq -e '(.state // "SANDBOX_READY") == "SANDBOX_READY"' >/dev/null ||
      fail "after containerd's restart, the pod is not ready"
    served "$ca" uverbs0 "containerd's restart"
    ;;
esac

# The pod's end as a kubelet ends it. The rails come back with the container that holds them
# (its runtime state deleted once it has stopped), while the pod's other container still runs.
cri stop --grace 1 "$ca" || fail "StopContainer nic"
for i in $(seq 50); do ip link show rail0 >/dev/null 2>&1 && break; sleep 0.1; done
rails_back "StopContainer of the container holding them ($CASE)"
if [[ $CASE == plain ]]; then
  # The kubelet restarts that container in the same pod (its next attempt): the rails go in again.
  jq '.metadata.attempt = 1' "$WORK/pods/railed.nic.json" >"$WORK/pods/railed.nic1.json"
  ca1=$(cri create "$pod" "$WORK/pods/railed.nic1.json" "$POD_JSON") || fail "CreateContainer nic, attempt 1"
  cri start "$ca1" || fail "StartContainer nic, attempt 1"
  in_pod "$ca1" >"$WORK/a1.addr" 2>&1
  expect "$WORK/a1.addr" "rail0 +inet 198\.51\.100\.10/24"
  [[ $(ls "$STATE" | wc -l) == 1 ]] || fail "after the restart, the rail state directory holds: $(ls "$STATE")"
  served "$ca1" uverbs0 "the container's restart"
  cri stop --grace 1 "$ca1" || fail "StopContainer nic, attempt 1"
  for i in $(seq 50); do ip link show rail0 >/dev/null 2>&1 && break; sleep 0.1; done
  rails_back "StopContainer of the restarted container"
  cri rm "$ca1" || fail "RemoveContainer nic, attempt 1"
fi
cri stop --grace 1 "$cb" || fail "StopContainer other"
cri stopp "$pod" || fail "StopPodSandbox"
for c in "$ca" "$cb"; do cri rm "$c" || fail "RemoveContainer $c"; done
cri rmp "$pod" || fail "RemovePodSandbox"
unset 'CRI_PODS[-1]'
rails_back "RemovePodSandbox ($CASE)"
[[ -z $(runc --root "$WORK/runc/k8s.io" list -q 2>/dev/null) ]] || fail "runc keeps state: $(runc --root "$WORK/runc/k8s.io" list -q)"
"$GP" agent ctl --ctl-socket "$WORK/run/agent.ctl" list | jq -r .id | grep -qE "^($pod|$ca|$cb)$" &&
  fail "the agent still serves the pod"
echo "PASS: rails in a CRI pod ($CASE): moved once into the pod's network namespace, calls served and traced, everything back as before after RemovePodSandbox"
