#!/usr/bin/env bash
# The fd store behind Debian's real runc (issue 29 item 5): a container whose `runc exec` process
# has exited keeps its init supervised across two SIGKILLs of the agent. runc hands over one
# listener per process (the init's, status "creating"; the exec's, "running", from the exec'd
# process): the store must keep one entry per process and drop the exec's when it exits, so the
# exec's dead entry never takes the init's with it.
# Stand-in device nodes (gdrproxy-testkit standin) give the container a uverbs0.
# Usage: oci_fd_store_test.sh GDRPROXY ATTACK_CLIENT   (needs root and runc; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
TK=$(dirname "$GP")/gdrproxy-testkit  # the tests' tool: stand-in devices, exercisers
A=$(realpath "$2")
BUNDLE=$(realpath "$(dirname "$0")/oci_bundle.py")  # a runc/crun config.json
[[ $EUID == 0 ]] || { echo "SKIP: needs root"; exit 77; }
command -v runc >/dev/null || { echo "SKIP: runc is not installed (scripts/setup.sh installs it)"; exit 77; }
if [[ -z ${GDRPROXY_OCI_TEST_INNER:-} ]]; then
  GDRPROXY_OCI_TEST_INNER=1 exec timeout -k 5 120 "$TK" standin "$0" "$@"
fi
if [[ $(stat -f -c %T /sys/fs/cgroup) != cgroup2fs ]]; then
  mount -t cgroup2 none /sys/fs/cgroup || { echo "SKIP: cannot mount cgroup2 here"; exit 77; }
fi
WORK=$(mktemp -d /tmp/gdrproxy-ocistore.XXXXXX)
chmod 755 "$WORK"
ID=oci-store-$$
STORE=$WORK/run/fds.sock
AGENT_PID=
cleanup() {
  runc --root "$WORK/runc" delete -f $ID >/dev/null 2>&1
  [[ -n $AGENT_PID ]] && kill -KILL "$AGENT_PID" 2>/dev/null
  # The holder: a copy of the agent process, named by this test's unique store path.
  for p in $(pgrep -f -- "--fd-store $STORE"); do kill -KILL "$p" 2>/dev/null; done
  umount -R "$WORK"/bundle/rootfs 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  local f
  for f in "$WORK"/agent.[0-9]*.log "$WORK/agent.log"; do
    [[ -f $f ]] && sed "s/^/  [$(basename "$f" .log)] /" "$f" >&2
  done
  exit 1
}
expect_line() {
  local line
  line=$(grep -m1 -F -- "$2" "$1") || { echo "--- $1:"; cat "$1"; fail "no '$2' line in $1"; }
  [[ $line =~ $3 ]] || { echo "--- $1:"; cat "$1"; fail "'$line' does not match /$3/"; }
}

SOCK=$WORK/run/agent.sock
CTL=$WORK/run/agent.ctl
echo '{"version": 1, "containers": [{"match": {"id": "oci-store-*"}, "grants": ["uverbs0"]}]}' >"$WORK/agent.json"
start_agent() {
  rm -f "$SOCK" "$CTL"
  "$GP" agent --socket "$SOCK" --ctl-socket "$CTL" --config "$WORK/agent.json" --fd-store "$STORE" \
    >"$WORK/agent.log" 2>&1 &
  AGENT_PID=$!
  local i
  for i in $(seq 100); do grep -q "gdrproxy agent: serving" "$WORK/agent.log" && return 0; sleep 0.05; done
  fail "the agent did not start"
}
kill_and_restart_agent() {
  kill -KILL "$AGENT_PID"
  wait "$AGENT_PID" 2>/dev/null
  cp "$WORK/agent.log" "$WORK/agent.$1.log"
  start_agent
}
start_agent

# Docker's format, every syscall allowed (ioctl and openat unconditionally: the rewrite keeps the
# notify rules), and a bundle of the host's /usr and /etc with the stand-in uverbs0.
"$BUNDLE" --allow-all-base "$WORK/base.json"
B=$WORK/bundle
mkdir -p "$B/rootfs" "$WORK/shared"
(cd "$B/rootfs" && mkdir -p usr etc proc dev tmp shared "${A%/*}" && ln -s usr/bin bin && ln -s usr/lib lib &&
  ln -s usr/lib64 lib64 && ln -s usr/sbin sbin)
"$GP" oci seccomp --base "$WORK/base.json" --listener "$SOCK" --metadata store --runtime runc \
  >"$B/seccomp.json" || fail "gdrproxy oci seccomp failed"
touch "$WORK/shared/hold"
"$BUNDLE" "$B/config.json" --id "$ID" --seccomp "$B/seccomp.json" --device /dev/infiniband/uverbs0 \
  --bind "${A%/*}" --bind-rw "$WORK/shared:/shared" -- \
  sh -c "while [ -e /shared/hold ]; do sleep 0.1; done; $A open /dev/infiniband/uverbs0 rdwr syscall | sed s/^/uverbs0-/"

runc --root "$WORK/runc" run --bundle "$B" $ID >"$WORK/init.out" 2>&1 &
c=$!
for i in $(seq 100); do grep -q "container $ID: process" "$WORK/agent.log" && break; sleep 0.05; done
grep -q "container $ID: process" "$WORK/agent.log" || fail "runc's container was not adopted"
runc --root "$WORK/runc" exec $ID sh -c "$A open /dev/infiniband/uverbs0 rdwr syscall | sed s/^/uverbs0-/" \
  >"$WORK/exec.out" 2>&1 || { cat "$WORK/exec.out"; fail "runc exec failed"; }
expect_line "$WORK/exec.out" "uverbs0-open" " OK ioctl="
grep -q "joins its session (2 listeners)" "$WORK/agent.log" || fail "runc exec's listener did not join"
sleep 0.5
kill_and_restart_agent 1
kill_and_restart_agent 2
rm "$WORK/shared/hold"
for i in $(seq 100); do kill -0 $c 2>/dev/null || break; sleep 0.1; done
kill -0 $c 2>/dev/null && fail "the container did not finish"
wait $c
expect_line "$WORK/init.out" "uverbs0-open" " OK ioctl="
grep -q "container $ID: re-attached from the fd store" "$WORK/agent.log" || fail "the init was not re-attached at the second restart"
echo "PASS: runc's init served after its exec exited and two agent restarts"
