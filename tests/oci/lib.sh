# shellcheck shell=bash
# Helpers of the OCI tests that run real runc with `gdrproxy agent` on stand-in device nodes
# (sourced by tests/oci/*_test.sh and tests/bench/{container,docker}_start.sh; the soft-RoCE VM stage's
# tests/vm/docker.sh sources it for Docker on real rxe devices). The idea not to miss: each
# test re-executes itself inside `gdrproxy-testkit standin` (its own mount namespace, optionally its own
# network namespace as the "host"), where a plain cgroup2 hierarchy is mounted for runc's device
# program; everything it makes lives under $WORK and goes with the EXIT trap.

# oci_enter GP NET SCRIPT ARGS...: skip (77) unless root with runc; outside, re-exec SCRIPT in a
# stand-in mount namespace (gdrproxy-testkit standin, beside GP; in a fresh network namespace too
# when NET is "net"); inside, make sure
# /sys/fs/cgroup is a cgroup2 hierarchy. OCI_ENTER_TIMEOUT: seconds for the whole script (120).
oci_enter() {
  local gp=$1 net=$2
  shift 2
  [[ $EUID == 0 ]] || { echo "SKIP: needs root"; exit 77; }
  command -v runc >/dev/null || { echo "SKIP: runc is not installed (scripts/setup.sh installs it)"; exit 77; }
  if [[ -z ${GDRPROXY_OCI_TEST_INNER:-} ]]; then
    local -a pre=()
    [[ $net == net ]] && pre=(unshare --net)
    GDRPROXY_OCI_TEST_INNER=1 exec timeout "${OCI_ENTER_TIMEOUT:-120}" "${pre[@]}" "$(dirname "$gp")/gdrproxy-testkit" standin "$@"
  fi
  # runc's device guard on cgroup v2 is a BPF program: a plain v2 hierarchy in this private mount
  # namespace is enough (this host may mount v1 controllers beside cgroup2).
  if [[ $(stat -f -c %T /sys/fs/cgroup) != cgroup2fs ]]; then
    mount -t cgroup2 none /sys/fs/cgroup || { echo "SKIP: cannot mount cgroup2 here"; exit 77; }
  fi
}

fail() { echo "FAIL: $*" >&2; [[ -f $WORK/agent.log ]] && sed 's/^/  [agent] /' "$WORK/agent.log" >&2; exit 1; }
expect() { grep -qaE -- "$2" "$1" || { echo "--- $1:"; cat -v "$1"; fail "expected /$2/ in $1"; }; }

# oci_start_agent CONFIG_JSON [AGENT OPTIONS...]: the agent on $WORK/run/agent.sock (SOCK) with
# that config (written to $WORK/agent.json, or the file OCI_AGENT_CONFIG names), log in
# $WORK/agent.log; sets AGENT_PID. Its rail sweep reads $WORK/run/rails, not
# the host's /run/gdrproxy, where tests running beside it keep their journals (OCI_RAIL_STATE_DIR
# names another: the rail hooks' test sweeps what its hooks wrote there).
oci_start_agent() {
  SOCK=$WORK/run/agent.sock
  local config=${OCI_AGENT_CONFIG:-$WORK/agent.json}
  printf '%s\n' "$1" >"$config"
  shift
  "$GP" agent --socket "$SOCK" --ctl-socket "$WORK/run/agent.ctl" --config "$config" \
    --rail-state-dir "${OCI_RAIL_STATE_DIR:-$WORK/run/rails}" "$@" >"$WORK/agent.log" 2>&1 &
  AGENT_PID=$!
  local i
  for i in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.05; done
  [[ -S $SOCK ]] || fail "the agent did not start"
}

# oci_rootfs BUNDLE [DIR...]: BUNDLE/rootfs holding Debian's static busybox as /bin with its
# applets, and mount points for /proc, /dev, /tmp, /sys, the host's libraries (OCI_LIB_BINDS) and
# each DIR. The container's userland is busybox alone: the host's /usr is not in it. OCI_BUSYBOX
# names another static busybox (a machine without the package: the GPU bundle's).
oci_rootfs() {
  local b=$1 applet bb=${OCI_BUSYBOX:-/bin/busybox}
  shift
  [[ -x $bb ]] && ! ldd "$bb" >/dev/null 2>&1 ||
    fail "the test rootfs needs a static /bin/busybox (package busybox-static)"
  mkdir -p "$b/rootfs"
  (cd "$b/rootfs" && mkdir -p bin usr/lib usr/lib64 usr/bin etc proc dev tmp sys "${@#/}" &&
    ln -s usr/lib lib && ln -s usr/lib64 lib64 && ln -s bin sbin) || fail "cannot make $b/rootfs"
  cp "$bb" "$b/rootfs/bin/busybox"
  for applet in $("$bb" --list); do
    [[ -e $b/rootfs/bin/$applet ]] || ln -s busybox "$b/rootfs/bin/$applet"
  done
  touch "$b/rootfs/usr/bin/lstopo-no-graphics"
}
# The host's libraries, read-only, for the dynamically linked programs a test runs inside (the
# project's attack and bench clients, hwloc's lstopo-no-graphics, bound at /usr/bin as a file),
# as OCI mounts in JSON (a Python list literal too); lstopo only where the host has it.
OCI_LIB_BINDS='[{"destination": "/usr/lib", "type": "bind", "source": "/usr/lib", "options": ["rbind", "ro"]},
 {"destination": "/usr/lib64", "type": "bind", "source": "/usr/lib64", "options": ["rbind", "ro"]}'
if [[ -e /usr/bin/lstopo-no-graphics ]]; then
  OCI_LIB_BINDS+=',
 {"destination": "/usr/bin/lstopo-no-graphics", "type": "bind", "source": "/usr/bin/lstopo-no-graphics",
  "options": ["bind", "ro"]}'
fi
OCI_LIB_BINDS+=']'
export OCI_LIB_BINDS

# The docker CLI of Debian's docker.io (another may stand first in PATH), each call bounded.
docker() { timeout "${OCI_DOCKER_TIMEOUT:-60}" /usr/bin/docker "$@"; }

# oci_dockerd RUNTIME_JSON [RUNTIME]: Debian's dockerd (docker.io) with everything under $WORK
# (data and exec roots, socket, pid file, $WORK/dockerd.log), no bridge, no iptables, the vfs
# storage driver, and the documented daemon.json entry (docs/CONTAINERS.md, "Docker and
# containerd"): runtime "gdrproxy", the path RUNTIME (default: a link $WORK/gdrproxy-runtime to
# $GP), RUNTIME_JSON as its --gdrproxy-config runtime argument.
# containerd inherits dockerd's environment, and its shims theirs: GDRPROXY_RUNTIME_CONFIG names
# the same file for a runtime containerd calls without arguments of its own (`ctr run
# --runc-binary`). Exports DOCKER_HOST, sets DOCKERD_PID; fails unless dockerd answers within
# OCI_DOCKERD_WAIT seconds (30).
oci_dockerd() {
  export DOCKER_HOST=unix://$WORK/docker.sock
  local rt=${2:-$WORK/gdrproxy-runtime}
  [[ -n ${2:-} ]] || ln -sf "$GP" "$rt"
  jq -n --arg p "$rt" --arg c "--gdrproxy-config=$1" \
    '{runtimes: {gdrproxy: {path: $p, runtimeArgs: [$c]}}}' >"$WORK/daemon.json"
  # --ip-forward=false: dockerd would otherwise turn on this namespace's IPv4 forwarding, which
  # every link moved in afterwards (a rail given back) inherits: the rig's "host" would differ
  # from before for a reason of dockerd's, not the hooks'.
  GDRPROXY_RUNTIME_CONFIG=$1 dockerd --data-root "$WORK/data" --exec-root "$WORK/exec" --host "$DOCKER_HOST" \
    --pidfile "$WORK/dockerd.pid" --iptables=false --ip-masq=false --ip-forward=false --bridge=none --storage-driver=vfs \
    --config-file "$WORK/daemon.json" >"$WORK/dockerd.log" 2>&1 &
  DOCKERD_PID=$!
  local i
  for ((i = 0; i < ${OCI_DOCKERD_WAIT:-30} * 5; i++)); do
    docker version >/dev/null 2>&1 && return 0
    kill -0 "$DOCKERD_PID" 2>/dev/null || break
    sleep 0.2
  done
  tail -20 "$WORK/dockerd.log" >&2
  fail "dockerd did not start"
}

# oci_dockerd_stop: removes every container of that dockerd, stops it (bounded) and the containerd
# it started (found by its paths under $WORK); a container the daemons left behind (they were
# killed, or stuck) is deleted with runc itself, which runs its poststop hooks.
oci_dockerd_stop() {
  [[ -n ${DOCKERD_PID:-} ]] || return 0
  # shellcheck disable=SC2046 # one argument per container id
  docker rm -f $(docker ps -aq) >/dev/null 2>&1
  kill "$DOCKERD_PID" 2>/dev/null
  local i id
  for ((i = 0; i < 100; i++)); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$DOCKERD_PID" 2>/dev/null
  pkill -KILL -f "containerd.*$WORK" 2>/dev/null
  for id in $(runc --root "$WORK/exec/runtime-runc/moby" list -q 2>/dev/null); do
    timeout 20 runc --root "$WORK/exec/runtime-runc/moby" delete -f "$id" >/dev/null 2>&1
  done
  DOCKERD_PID=
}

# oci_veth_rails: rail0 and rail1 (veth, peers rail0p/rail1p) with 198.51.100.10/24 and .11/24,
# up, in the current network namespace.
oci_veth_rails() {
  local r
  ip link set lo up
  for r in 0 1; do
    ip link add rail$r type veth peer name rail${r}p
    ip addr add 198.51.100.1$r/24 dev rail$r
    ip link set rail$r up
    ip link set rail${r}p up
  done
}

# oci_runc_bounded PATH: prints the runtime a privileged container can start under on this
# machine: "runc" where the capability bounding set is full (a node's is), else PATH, written
# here: runc with the capabilities this machine lacks taken out of the bundle (test rig: this
# build machine's root lacks CAP_SYS_RESOURCE, and runc cannot give a capability it lacks).
oci_runc_bounded() {
  local missing lacks
  missing=$((~0x$(awk '/^CapBnd/ {print $2}' /proc/self/status) & ((1 << ($(cat /proc/sys/kernel/cap_last_cap) + 1)) - 1)))
  ((missing)) || { echo runc; return 0; }
  lacks=$(capsh --decode="$(printf '%x' "$missing")" | sed 's/.*=//' | tr '[:lower:]' '[:upper:]') ||
    fail "capsh (libcap2-bin) is needed"
  cat >"$1" <<EOS
#!/bin/sh
# runc, the bundle's capabilities without $lacks (this machine's bounding set lacks them).
prev=
for a; do
  if [ "\$prev" = --bundle ] || [ "\$prev" = -b ]; then
    jq --arg drop "$lacks" '(\$drop | split(",")) as \$d | .process.capabilities |= map_values(map(select(IN(\$d[]) | not)))' \\
      "\$a/config.json" >"\$a/config.json.bounded" && mv "\$a/config.json.bounded" "\$a/config.json" || exit 1
  fi
  prev=\$a
done
exec runc "\$@"
EOS
  chmod 755 "$1" || fail "cannot write $1"
  echo "$1"
}
