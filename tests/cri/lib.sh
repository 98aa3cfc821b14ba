# shellcheck shell=bash
# Helpers of the CRI tests (tests/cri/*.sh; the DaemonSet image's test may source it too): a
# private containerd whose CRI plugin has a runtime handler for gdrproxy, driven with
# tests/cri/cri_client.py as a kubelet drives it, on images built offline. The idea not to miss:
# everything containerd owns lives under $WORK (root, state, sockets, runc's state, the pods'
# network namespaces, CNI's IPAM) and the bridge carries the run's pid, so two runs side by side
# never meet; the caller enters a mount and network namespace of its own first (oci_enter from
# tests/oci/lib.sh, whose fail/expect this file uses), and its EXIT trap calls cri_cleanup.
#
# Functions (each documented where it is defined):
#   cri_require         skip (77) unless containerd and the CRI client's modules are here
#   cri_images          the pause and busybox images, built here, imported into containerd
#   cri_containerd      containerd with handlers "gdrproxy" (RUNTIME, RUNTIME_CONFIG) and "runc"
#   cri_snapshotter     overlayfs where it mounts here, else native
#   cri                 the CRI client on that containerd
#   cri_pod / cri_ctr   pod and container configs as CRI JSON
#   cri_runp            RunPodSandbox, the pod remembered for cri_cleanup
#   cri_cleanup         every pod removed, containerd and its shims stopped, runc state gone
# Variables the caller may set before cri_containerd: CRI_SNAPSHOTTER (overlayfs where it works,
# else native: cri_snapshotter), CRI_WAIT (30 s).

CRI_LIB_DIR=$(dirname "${BASH_SOURCE[0]}")
CRI_PAUSE_IMAGE=gdrproxy.test/pause:1
CRI_BUSYBOX_IMAGE=gdrproxy.test/busybox:1
CRI_PODS=()
CTD_PID=''

# cri_require: exits 77 (skipped) with the reason unless containerd, ctr, protoc and Debian's
# python3 with grpcio and protobuf are installed (scripts/setup.sh installs them).
cri_require() {
  command -v containerd >/dev/null && command -v ctr >/dev/null ||
    { echo "SKIP: containerd is not installed (scripts/setup.sh installs it)"; exit 77; }
  /usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null && command -v protoc >/dev/null ||
    { echo "SKIP: needs python3-grpcio, python3-protobuf and protobuf-compiler"; exit 77; }
}

# cri ARGS...: tests/cri/cri_client.py on this containerd's socket (Debian's python3, whose
# grpcio and protobuf it needs); the messages are compiled into $WORK/pb on first use.
cri() { /usr/bin/python3 "$CRI_LIB_DIR/cri_client.py" --socket "$CTD_SOCK" --pb-dir "$WORK/pb" "$@"; }

# cri_images: $WORK/images/{pause,busybox}.tar as OCI image layouts, imported into containerd's
# k8s.io namespace as $CRI_PAUSE_IMAGE and $CRI_BUSYBOX_IMAGE (no registry is reached; the pod
# specs name images that are present). pause: a few lines of C built static here, as the
# sandbox's init (waits for a signal, reaps nothing: the pod shares no pid namespace). busybox:
# Debian's static busybox with its applets (oci_rootfs), entrypoint none, PATH=/bin:/usr/bin.
cri_images() {
  local d=$WORK/images
  mkdir -p "$d/pause/rootfs" || fail "mkdir $d"
  cat >"$d/pause.c" <<'C'
#include <signal.h>
#include <unistd.h>
static void bye(int sig) { _exit(sig == SIGTERM || sig == SIGINT ? 0 : 1); }
int main(void) {
  signal(SIGTERM, bye);
  signal(SIGINT, bye);
  for (;;) pause();
}
C
  gcc -static -O2 -o "$d/pause/rootfs/pause" "$d/pause.c" || fail "cannot build a static pause (gcc, libc6-dev)"
  oci_rootfs "$d/busybox"
  "$CRI_LIB_DIR/oci_image.py" "$d/pause/rootfs" "$CRI_PAUSE_IMAGE" "$d/pause.tar" --entrypoint /pause ||
    fail "cannot write the pause image"
  "$CRI_LIB_DIR/oci_image.py" "$d/busybox/rootfs" "$CRI_BUSYBOX_IMAGE" "$d/busybox.tar" ||
    fail "cannot write the busybox image"
  local t
  for t in pause busybox; do
    timeout 60 ctr -a "$CTD_SOCK" -n k8s.io images import --snapshotter "$CRI_SNAPSHOTTER" \
      "$d/$t.tar" >"$d/$t.import" 2>&1 || { cat "$d/$t.import"; fail "ctr images import $t"; }
  done
  # The CRI plugin learns of imported images from containerd's events: wait until it sees both.
  local i
  for i in $(seq 50); do
    cri inspecti "$CRI_PAUSE_IMAGE" 2>/dev/null | grep -q '"id"' &&
      cri inspecti "$CRI_BUSYBOX_IMAGE" 2>/dev/null | grep -q '"id"' && return 0
    sleep 0.1
  done
  fail "the CRI plugin does not list the imported images"
}

# cri_snapshotter: overlayfs where $WORK's file system takes an overlay mount (a node's usual
# snapshotter: a container's rootfs costs no copy), else native (a copy per container).
cri_snapshotter() {
  local o=$WORK/ovl-probe
  mkdir -p "$o/lower" "$o/upper" "$o/work" "$o/merged"
  if mount -t overlay overlay -o "lowerdir=$o/lower,upperdir=$o/upper,workdir=$o/work" "$o/merged" 2>/dev/null; then
    umount "$o/merged"
    echo overlayfs
  else
    echo native
  fi
  rm -rf "$o"
}

# cri_containerd RUNTIME RUNTIME_CONFIG: Debian's containerd (1.6) on $WORK/ctd, its CRI plugin
# with the handler "gdrproxy" (runc v2 shim, BinaryName RUNTIME, the shim reading RUNTIME_CONFIG
# through GDRPROXY_RUNTIME_CONFIG in containerd's environment, which its shims inherit) and
# "runc" (the default), both keeping runc's state under $WORK/runc; CNI: a bridge "gpc$$" with
# host-local addresses from 203.0.113.0/24 (IPAM state under $WORK), binaries /usr/lib/cni. The
# cgroup2 hierarchy of a host that binds cpu and memory to cgroup v1 has no controller for the
# pods' shares: the CRI plugin's cgroup support is then off (disable_cgroup; runc still puts
# each container in a cgroup of its own and applies its device program). Sets CTD_SOCK, CTD_PID.
# CRI_MORE_HANDLERS ("NAME=BINARY ...") adds handlers of the same kind with those BinaryNames.
# CRI_HANDLER_CNI ("NAME=DIR ...") gives such a handler CNI networks of its own: every conflist
# in DIR, attached in name order as eth0, eth1, ... (containerd's per-runtime cni_conf_dir and
# cni_max_conf_num, as an operator gives a RuntimeClass a second network). DIR's first file is
# written here: the bridge network every other pod gets.
# DBG_RUNC names a program to stand for runc under the "runc" handler (a wrapper that keeps
# bundles and runc's logs, when a pod fails to start for a reason of the machine's).
# Called again after containerd was killed, it starts on the same root and state (a node's
# restart).
cri_containerd() {
  local rt=$1 rtconf=$2 c=$WORK/ctd
  [[ -n ${CRI_SNAPSHOTTER:-} ]] || CRI_SNAPSHOTTER=$(cri_snapshotter)
  CTD_SOCK=$c/containerd.sock
  mkdir -p "$c/state" "$WORK/cni/net.d" "$WORK/cni/ipam" "$WORK/runc" "$WORK/pods" || fail "mkdir under $WORK"
  # containerd's state (the bundles) and runc's root on a tmpfs, as a node's /run/containerd is
  # (this test's mount namespace is its own: oci_enter); its root (images, snapshots) on disk.
  local d
  for d in "$c/state" "$WORK/runc"; do
    mountpoint -q "$d" || mount -t tmpfs -o mode=0711 tmpfs "$d" || fail "cannot mount a tmpfs on $d"
  done
  local nocg=false
  grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null || nocg=true
  # Where this machine may not lower a process's oom_score_adj (a CI job in a container without
  # CAP_SYS_RESOURCE), the CRI plugin keeps its containers' at or above its own.
  local oomfloor=false
  sh -c 'echo -999 >/proc/self/oom_score_adj' 2>/dev/null || oomfloor=true
  cat >"$WORK/cni/net.d/10-gdrproxy-test.conflist" <<JSON
{"cniVersion": "0.4.0", "name": "gdrproxy-cri-$$",
 "plugins": [{"type": "bridge", "bridge": "gpc$$", "isGateway": true, "ipMasq": false,
              "ipam": {"type": "host-local", "dataDir": "$WORK/cni/ipam",
                       "ranges": [[{"subnet": "203.0.113.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}}]}
JSON
  local hc
  for hc in ${CRI_HANDLER_CNI:-}; do
    mkdir -p "${hc#*=}" && cp "$WORK/cni/net.d/10-gdrproxy-test.conflist" "${hc#*=}/" || fail "CNI networks of ${hc%%=*}"
  done
  local cri='plugins."io.containerd.grpc.v1.cri"'
  cat >"$c/config.toml" <<TOML
version = 2
root = "$c/root"
state = "$c/state"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$CTD_SOCK"
[ttrpc]
  address = "$c/containerd.ttrpc.sock"
[$cri]
  sandbox_image = "$CRI_PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  disable_cgroup = $nocg
  restrict_oom_score_adj = $oomfloor
  netns_mounts_under_state_dir = true
  [$cri.containerd]
    snapshotter = "$CRI_SNAPSHOTTER"
    default_runtime_name = "runc"
    [$cri.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [$cri.containerd.runtimes.runc.options]
        ${DBG_RUNC:+BinaryName = \"$DBG_RUNC\"}
        Root = "$WORK/runc"
    [$cri.containerd.runtimes.gdrproxy]
      runtime_type = "io.containerd.runc.v2"
      [$cri.containerd.runtimes.gdrproxy.options]
        BinaryName = "$rt"
        Root = "$WORK/runc"
$(for h in ${CRI_MORE_HANDLERS:-}; do
    printf '    [%s.containerd.runtimes.%s]\n      runtime_type = "io.containerd.runc.v2"\n' "$cri" "${h%%=*}"
    for hc in ${CRI_HANDLER_CNI:-}; do
      [[ ${hc%%=*} == "${h%%=*}" ]] || continue
      printf '      cni_conf_dir = "%s"\n      cni_max_conf_num = %d\n' "${hc#*=}" "$(find "${hc#*=}" -maxdepth 1 -name '*.conflist' | wc -l)"
    done
    printf '      [%s.containerd.runtimes.%s.options]\n        BinaryName = "%s"\n        Root = "%s"\n' \
      "$cri" "${h%%=*}" "${h#*=}" "$WORK/runc"
  done)
  [$cri.cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$WORK/cni/net.d"
    max_conf_num = 1
TOML
  GDRPROXY_RUNTIME_CONFIG=$rtconf containerd --config "$c/config.toml" >>"$WORK/containerd.log" 2>&1 &
  CTD_PID=$!
  local i
  for ((i = 0; i < ${CRI_WAIT:-30} * 5; i++)); do
    [[ -S $CTD_SOCK ]] && cri --timeout 2 version >/dev/null 2>&1 && return 0
    kill -0 "$CTD_PID" 2>/dev/null || break
    sleep 0.2
  done
  tail -30 "$WORK/containerd.log" >&2
  fail "containerd did not start"
}

# cri_pod NAME [SECURITY_CONTEXT_JSON]: writes $WORK/pods/NAME.json, a pod's sandbox config as a
# kubelet writes it (metadata with a uid, logs under $WORK/pods/NAME.logs, the CRI's default
# namespaces) and prints its path.
cri_pod() {
  local f=$WORK/pods/$1.json
  mkdir -p "$WORK/pods/$1.logs"
  jq -n --arg n "$1" --arg uid "$1-$$" --arg logs "$WORK/pods/$1.logs" --argjson sc "${2:-{\}}" \
    '{metadata: {name: $n, uid: $uid, namespace: "gdrproxy-test", attempt: 0}, hostname: $n,
      log_directory: $logs, dns_config: {servers: ["192.0.2.53"]},
      labels: {"io.kubernetes.pod.name": $n}, annotations: {"test.gdrproxy/run": "cri"},
      linux: {security_context: ({namespace_options: {network: "POD", pid: "CONTAINER", ipc: "POD"}} + $sc)}}' >"$f" ||
    fail "cri_pod $1"
  echo "$f"
}

# cri_ctr POD NAME DEVICES_JSON ARGV_JSON: writes $WORK/pods/POD.NAME.json, a container's config
# (the busybox image, ARGV as its command, DEVICES as a device plugin's Allocate returns them:
# [{container_path, host_path, permissions}], the host's /usr/lib{,64} and each of
# CRI_CTR_BINDS (directories) read-only, the runtime's default seccomp profile, log
# NAME.log under the pod's log directory) and prints its path.
cri_ctr() {
  local f=$WORK/pods/$1.$2.json binds
  # shellcheck disable=SC2086 # CRI_CTR_BINDS is a list of directories, split on spaces
  binds=$(printf '%s\n' /usr/lib /usr/lib64 ${CRI_CTR_BINDS:-} | jq -R '{container_path: ., host_path: ., readonly: true}' | jq -s .)
  jq -n --arg n "$2" --argjson dev "$3" --argjson argv "$4" --argjson mounts "$binds" \
    '{metadata: {name: $n, attempt: 0}, image: {image: "'"$CRI_BUSYBOX_IMAGE"'"}, command: $argv,
      envs: [{key: "PATH", value: "/bin:/usr/bin"}], devices: $dev, mounts: $mounts,
      labels: {"io.kubernetes.container.name": $n}, log_path: ($n + ".log"),
      linux: {security_context: {seccomp: {profile_type: "RuntimeDefault"}}}}' >"$f" || fail "cri_ctr $2"
  echo "$f"
}

# cri_runp POD_JSON [HANDLER]: RunPodSandbox; prints the pod id and remembers it for cri_cleanup.
# (In the caller's shell, not a subshell: CRI_POD holds the id afterwards.)
cri_runp() {
  CRI_POD=$(cri runp "$1" --handler "${2:-}") || fail "RunPodSandbox $1 (handler ${2:-default})"
  CRI_PODS+=("$CRI_POD")
}

# cri_cleanup: each pod stopped and removed (with its containers), containerd stopped (bounded),
# then what a killed containerd leaves: its shims (found by the pid files in its bundles) and
# any runc container still in $WORK/runc (deleted with runc, which runs poststop hooks).
cri_cleanup() {
  local p i pid id root
  if [[ -n $CTD_PID ]] && kill -0 "$CTD_PID" 2>/dev/null; then
    for p in "${CRI_PODS[@]}"; do
      cri --timeout 30 stopp "$p" >/dev/null 2>&1
      cri --timeout 30 rmp "$p" >/dev/null 2>&1
    done
    kill "$CTD_PID" 2>/dev/null
    for ((i = 0; i < 100; i++)); do kill -0 "$CTD_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$CTD_PID" 2>/dev/null
  fi
  for pid in $(cat "$WORK"/ctd/state/io.containerd.runtime.v2.task/*/*/shim.pid 2>/dev/null); do
    kill -KILL "$pid" 2>/dev/null
  done
  # The runc v2 shim keeps runc's state in Root/<containerd namespace>.
  for root in "$WORK"/runc/*; do
    for id in $(runc --root "$root" list -q 2>/dev/null); do
      timeout 20 runc --root "$root" delete -f "$id" >/dev/null 2>&1
    done
  done
  ip link del "gpc$$" 2>/dev/null
  umount -R "$WORK/ctd/state" "$WORK/runc" 2>/dev/null
  CTD_PID=''
}
