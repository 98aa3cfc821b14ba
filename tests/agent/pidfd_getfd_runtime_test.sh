#!/usr/bin/env bash
# pidfd_getfd between a container's processes, behind Debian's runc and crun, as a hostile tenant
# (root in its container, Docker's default capabilities) who has read the agent's code.
#   exec_helpers_kept RUNTIME: the agent brokers pidfd_getfd for the container (its rule says so)
#     and grants it one node. A tenant process takes fds 0..31 of every young process of the
#     container while `RUNTIME exec` runs again and again: the runtime's helper
#     (`runc:[2:INIT]`, crun's exec child) sits in the container between setns and exec, holding
#     the exec'd process's seccomp listener, the socket to the host runtime and host state files
#     (crun's <root>/<id>/seccomp.bpf). None of those may be taken; a tenant process's fd still
#     is (the broker works).
#   unbrokered_containers_kept_apart: two runc containers with the same uid and capabilities,
#     whose base profile allows pidfd_getfd (as Podman's does), the second in the first's pid
#     namespace (Podman's --pid container:, a pod's shared namespace); no rule brokers. The second
#     may not take the first's fd: the profile traps pidfd_getfd and the agent refuses it (EPERM,
#     with a line), where the kernel alone would let it.
# Usage: pidfd_getfd_runtime_test.sh GDRPROXY FD_SHARE CASE [RUNTIME]   (root; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
TK=$(dirname "$GP")/gdrproxy-testkit  # the tests' tool: stand-in devices, exercisers
F=$(realpath "$2")
BUNDLE=$(realpath "$(dirname "$0")/oci_bundle.py")  # a runc/crun config.json
CASE=$3
RT=${4:-runc}
[[ $EUID == 0 ]] || { echo "SKIP [$CASE]: needs root"; exit 77; }
command -v "$RT" >/dev/null || { echo "SKIP [$CASE]: $RT is not installed"; exit 77; }
command -v jq >/dev/null || { echo "SKIP [$CASE]: needs jq"; exit 77; }
if [[ -z ${GDRPROXY_PIDFD_RT_INNER:-} ]]; then
  GDRPROXY_PIDFD_RT_INNER=1 exec timeout -k 5 240 "$TK" standin "$0" "$@"
fi
# crun refuses a hybrid cgroup layout: a plain v2 hierarchy in this private mount namespace.
if [[ $(stat -f -c %T /sys/fs/cgroup) != cgroup2fs ]]; then
  mount -t cgroup2 none /sys/fs/cgroup || { echo "SKIP [$CASE]: cannot mount cgroup2 here"; exit 77; }
fi
WORK=$(mktemp -d /tmp/gdrproxy-pidfd-rt.XXXXXX)
chmod 755 "$WORK"
TAG=$$
IDS=()
AGENT_PID=
cleanup() {
  for id in "${IDS[@]}"; do "$RT" --root "$WORK/rt" delete -f "$id" >/dev/null 2>&1; done
  [[ -n $AGENT_PID ]] && { kill -KILL "$AGENT_PID"; wait "$AGENT_PID"; } 2>/dev/null
  umount -R "$WORK"/bundle-*/rootfs 2>/dev/null
  [[ -n ${KEEP_WORK:-} ]] && { echo "kept $WORK"; return; }
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL [$CASE $RT]: $*" >&2; sed 's/^/  [agent] /' "$WORK/agent.log" | tail -40 >&2; exit 1; }
show() { echo "--- $1:"; cat "$1"; }
# Global options of the runtime (crun without a cgroup manager: see oci_runtime_test.sh).
rt() {
  if [[ $RT == crun ]]; then crun --root "$WORK/rt" --cgroup-manager=disabled "$@"; else runc --root "$WORK/rt" "$@"; fi
}

SOCK=$WORK/run/agent.sock
BROKER=0
start_agent() {  # RULES (JSON array)
  printf '{"version": 1, "containers": %s}\n' "$1" >"$WORK/agent.json"
  "$GP" agent --socket "$SOCK" --ctl-socket "$WORK/run/agent.ctl" --config "$WORK/agent.json" \
    >"$WORK/agent.log" 2>&1 &
  AGENT_PID=$!
  for _ in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.05; done
  [[ -S $SOCK ]] || fail "the agent did not start"
}

# A base that allows every syscall this machine's headers name (pidfd_getfd among them).
"$BUNDLE" --allow-all-base "$WORK/base.json"

# bundle ID METADATA SCRIPT [PIDNS_PATH]: rootfs of the host's /usr and /etc (read-only binds),
# FD_SHARE's directory and $WORK/share (read-write); root with Docker's default capabilities.
bundle() {
  local b=$WORK/bundle-$1
  mkdir -p "$b/rootfs" "$WORK/share"
  (cd "$b/rootfs" && mkdir -p usr etc proc dev tmp share "${F%/*}" && ln -s usr/bin bin && ln -s usr/lib lib &&
    ln -s usr/lib64 lib64 && ln -s usr/sbin sbin)
  # Builds before issue 29 trap pidfd_getfd only when told to (the flag is gone since: always).
  local trap=()
  "$GP" oci seccomp --help 2>&1 | grep -q -- --broker-pidfd-getfd && [[ $BROKER == 1 ]] &&
    trap=(--broker-pidfd-getfd)
  "$GP" oci seccomp --base "$WORK/base.json" --listener "$SOCK" --metadata "$2" --runtime "$RT" \
    "${trap[@]}" >"$b/seccomp.json" || fail "gdrproxy oci seccomp failed"
  "$BUNDLE" "$b/config.json" --id "$1" --seccomp "$b/seccomp.json" --device /dev/infiniband/uverbs0 \
    --cgroup-allow --bind "${F%/*}" --bind-rw "$WORK/share:/share" --pidns "${4:-}" --docker-caps -- \
    sh -c "$3"
}

case_exec_helpers_kept() {
  local id=hlp-$RT-$TAG execs=15 ok=0
  BROKER=1
  start_agent '[{"match": {"id": "'"$id"'"}, "grants": ["uverbs0"], "broker_pidfd_getfd": true}]'
  # The tenant: a process holding a file of its own (fd_share serve), and the thief.
  bundle "$id" "tenant=$id" "$F serve /tmp/held & s=\$!; $F sweep /share/stop; kill \$s"
  IDS+=("$id")
  rt run --bundle "$WORK/bundle-$id" "$id" >"$WORK/out" 2>&1 &
  local run=$!
  for _ in $(seq 100); do [[ $(rt state "$id" 2>/dev/null | jq -r .status) == running ]] && break; sleep 0.05; done
  sleep 1.5  # the thief has swept the container's first processes (young for 1 s)
  for _ in $(seq $execs); do
    rt exec "$id" /usr/bin/true </dev/null >/dev/null 2>>"$WORK/exec.err" && ok=$((ok + 1))
  done
  touch "$WORK/share/stop"
  for _ in $(seq 200); do kill -0 $run 2>/dev/null || break; sleep 0.1; done
  kill -0 $run 2>/dev/null && { show "$WORK/out"; fail "the container did not end"; }
  grep -q "^sweep: " "$WORK/out" || { show "$WORK/out"; fail "the thief did not finish"; }
  echo "[$RT] $ok of $execs execs ran; thief: $(grep '^sweep: ' "$WORK/out")"
  echo "[$RT] agent refusals: $(grep -c 'a runtime.s helper before exec' "$WORK/agent.log") as runtime helpers (program outside the container)," \
    "$(grep -c 'own credentials may not take it' "$WORK/agent.log") by the caller's own credentials"
  # What a helper holds: a seccomp listener, a socket (the init socket, the runtime's sync and
  # console sockets), the runtime's state files; or any fd while the process is still the runtime.
  local stolen
  stolen=$(grep -E '^took .*(seccomp notify|socket:|seccomp\.bpf|'"$WORK"'/rt/)|^took pid=[0-9]+ comm=(runc|crun|runc:[^ ]*) ' "$WORK/out")
  [[ -z $stolen ]] || { show "$WORK/out"; fail "a runtime helper's fds were taken: $(echo "$stolen" | head -3)"; }
  ((ok > 0)) || { show "$WORK/exec.err"; fail "no exec ran"; }
  grep -q "^took .* -> /memfd:fd_share" "$WORK/out" ||
    { show "$WORK/out"; fail "the tenant's own process's fd was not taken (the broker refuses everything)"; }
}

case_unbrokered_containers_kept_apart() {
  local a=k6a-$TAG b=k6b-$TAG
  start_agent '[{"match": {"id": "k6*-'"$TAG"'"}, "grants": ["uverbs0"]}]'
  bundle "$a" "tenant=$a" "exec $F serve /share/held"
  IDS+=("$a")
  rt run --bundle "$WORK/bundle-$a" "$a" >"$WORK/a.out" 2>&1 &
  for _ in $(seq 100); do [[ -s $WORK/share/held ]] && break; sleep 0.05; done
  [[ -s $WORK/share/held ]] || { show "$WORK/a.out"; fail "the first container did not start"; }
  local apid
  apid=$(rt state "$a" | jq -r .pid)
  read -r pid fd <"$WORK/share/held"
  bundle "$b" "tenant=$b" "$F take $pid $fd" "/proc/$apid/ns/pid"
  IDS+=("$b")
  rt run --bundle "$WORK/bundle-$b" "$b" >"$WORK/b.out" 2>&1
  echo "[$RT] second container: $(cat "$WORK/b.out")"
  grep -q "^took: shared-by-" "$WORK/b.out" && fail "the second container took the first's fd"
  grep -q "^take ERR EPERM" "$WORK/b.out" || { show "$WORK/b.out"; fail "no EPERM"; }
  grep -q "\[$b\] denied pidfd_getfd by pid .*: pidfd_getfd is not brokered" "$WORK/agent.log" ||
    fail "no denial line from the agent"
}

"case_$CASE"
echo "PASS [$CASE $RT]"
