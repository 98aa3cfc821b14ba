# shellcheck shell=bash
# gdr-harness's container path: `gdr-harness run` with GDR_HARNESS_RUNTIME=runc or crun runs CMD
# as an OCI container of that runtime, served by `gdrproxy agent`, instead of under `gdrproxy run`
# in namespaces of the harness's own. Sourced by harness/gdr-harness (it needs its say/die,
# join_csv, GP, PLAN, NODE, RUN_DIR and CTR_NETNS).
#
# The idea not to miss: the rails are still moved by the harness (`gdrproxy netns move` into the
# pinned namespace at $CTR_NETNS, journal and teardown unchanged); the container joins that
# namespace by path, and it is always started through the runtime shim, `gdrproxy runtime`, with
# a config of its own (<state>/run/ctr-*/runtime.json: the real runtime, the agent's listener,
# the grant set). Everything about devices is the shim's: the seccomp profile with the agent's
# listener, /dev nodes of the granted devices only, device cgroup rules and the synthetic /sys;
# the harness writes the bundle's process, mounts and namespaces and nothing of the devices. The
# agent, when the harness starts it, lives as long as the node's runs and grants exactly the
# run's grant set; an operator's agent (GDR_HARNESS_AGENT_SOCKET) decides by its own config. The
# container's state is under $RUN_DIR, so `teardown` finds a killed run's container and agent
# there.

# The runtime; per container (OWNER_KEY: node, or rank-N with one container per rank) its
# directory (bundle, the runtime's state, the shim's config) and id: gdrh-<node>, or gdrh-<node>-rN.
oci_runtime() { printf '%s' "${GDR_HARNESS_RUNTIME:-}"; }
# The OCI runtime under the shim.
oci_real_runtime() { oci_runtime; }
oci_dir() { printf '%s/ctr-%s' "$RUN_DIR" "${1:-$OWNER_KEY}"; }
oci_root() { printf '%s/runtime' "$(oci_dir "${1:-}")"; }
oci_id() {
  local key=${1:-$OWNER_KEY}
  if [[ $key == node ]]; then printf 'gdrh-%s' "$NODE"; else printf 'gdrh-%s-r%s' "$NODE" "${key#rank-}"; fi
}

# Is the requested runtime one this path drives? Dies otherwise (before anything is changed).
oci_check_runtime() {
  local rt
  rt=$(oci_runtime)
  case $rt in
    runc | crun) ;;
    *) die "GDR_HARNESS_RUNTIME='$rt': the container path drives runc or crun (unset it to run under gdrproxy run)" 125 ;;
  esac
  command -v "$rt" >/dev/null 2>&1 || die "GDR_HARNESS_RUNTIME=$rt, but $rt is not installed (apt-get install $rt)" 125
  if [[ $rt == crun && $(stat -f -c %T /sys/fs/cgroup 2>/dev/null) != cgroup2fs ]]; then
    die "GDR_HARNESS_RUNTIME=crun: crun drives cgroup v2 only, and /sys/fs/cgroup here is not a cgroup2 hierarchy (v1 controllers beside it); use runc" 125
  fi
  if [[ -n ${GDR_HARNESS_ROOTFS:-} && ! -d ${GDR_HARNESS_ROOTFS} ]]; then
    die "GDR_HARNESS_ROOTFS='${GDR_HARNESS_ROOTFS}' is not a directory (an image's unpacked root file system)" 125
  fi
}

# The caps of a default Docker container: CMD gets them in every runtime (ping and the like work
# as in the user's usual containers; the device cgroup still refuses device nodes).
OCI_CAPS=(CAP_CHOWN CAP_DAC_OVERRIDE CAP_FSETID CAP_FOWNER CAP_MKNOD CAP_NET_RAW CAP_SETGID CAP_SETUID
  CAP_SETFCAP CAP_SETPCAP CAP_NET_BIND_SERVICE CAP_SYS_CHROOT CAP_KILL CAP_AUDIT_WRITE)

# oci_empty_root ROOT: an empty root file system for the host's /usr, /etc and /opt (bound
# read-only by the caller); prints, one a line, the other directories to bind (a host without a
# merged /usr has /bin, /lib... of its own).
oci_empty_root() {
  local root=$1 d
  mkdir -p "$root"/{usr,etc,opt,proc,dev,sys,tmp,run,root}
  # Merged /usr (Debian 12): /bin, /sbin, /lib* are links into /usr.
  for d in bin sbin lib lib32 lib64 libx32; do
    if [[ -L /$d ]]; then
      [[ -L $root/$d ]] || ln -s "$(readlink "/$d")" "$root/$d"
    elif [[ -d /$d ]]; then
      mkdir -p "$root/$d"
      printf '/%s\n' "$d"
    fi
  done
  for d in /usr /etc /opt; do [[ -d $d ]] && printf '%s\n' "$d"; done
  return 0
}

# oci_bundle BUNDLE ENVS_JSON CMD...: BUNDLE/config.json for CMD with the environment in
# ENVS_JSON (a JSON array of NAME=VALUE). The root file system is GDR_HARNESS_ROOTFS (an image's
# unpacked rootfs, read-only), or else the host's /usr, /etc and /opt bound read-only on an
# empty root. The caller's working directory is bound read-write at its own path and is CMD's.
# CMD gets the capabilities of a default Docker container (ping and the like work as in the
# user's usual containers; the device cgroup still refuses device nodes) and the harness's own
# hard memlock limit as both limits (RDMA memory registration pins pages).
oci_bundle() {
  local b=$1 envs=$2
  shift 2
  local root=$b/rootfs binds=()
  if [[ -n ${GDR_HARNESS_ROOTFS:-} ]]; then
    root=$(cd "$GDR_HARNESS_ROOTFS" && pwd -P)
  else
    mapfile -t binds < <(oci_empty_root "$root")
  fi
  local cwd memlock token=memlock-$$-$RANDOM$RANDOM
  cwd=$(pwd -P)
  # As much locked memory as the harness itself may have: raising a hard limit needs
  # CAP_SYS_RESOURCE, which a node's root does not always hold. (jq would print 2^64-1 as a
  # float, which runtimes refuse, so the number replaces a random token after jq.)
  memlock=$(ulimit -H -l)
  [[ $memlock == unlimited ]] && memlock=18446744073709551615 || memlock=$((memlock * 1024))
  # A working directory of / stays the image's own.
  [[ $cwd == / ]] || binds+=("$cwd")
  jq -n --arg root "$root" --argjson binds "$(jq -cn '$ARGS.positional' --args -- "${binds[@]}")" \
    --arg cwd "$cwd" --argjson env "$envs" --arg netns "$CTR_NETNS" \
    --arg token "$token" --arg user "${GDR_HARNESS_USER:-0:0}" --arg hostname "$(uname -n)" \
    --arg caps "$(join_csv "${OCI_CAPS[@]}")" --args '
    def bind($src; $opts): {destination: $src, type: "bind", source: $src, options: (["rbind"] + $opts)};
    ($user | split(":") | map(tonumber)) as $ug |
    ($caps | split(",")) as $caps |
    {
      ociVersion: "1.0.2",
      hostname: $hostname,
      process: {
        terminal: false, user: {uid: $ug[0], gid: $ug[1]}, cwd: $cwd, args: $ARGS.positional,
        env: $env, noNewPrivileges: true,
        capabilities: {bounding: $caps, effective: $caps, permitted: $caps},
        rlimits: [{type: "RLIMIT_MEMLOCK", hard: $token, soft: $token}]
      },
      root: {path: $root, readonly: true},
      mounts: ([
        {destination: "/proc", type: "proc", source: "proc"},
        {destination: "/dev", type: "tmpfs", source: "tmpfs", options: ["nosuid", "strictatime", "mode=755", "size=65536k"]},
        {destination: "/dev/pts", type: "devpts", source: "devpts", options: ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
        {destination: "/dev/shm", type: "tmpfs", source: "shm", options: ["nosuid", "noexec", "nodev", "mode=1777", "size=1g"]},
        {destination: "/tmp", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", "mode=1777"]},
        {destination: "/run", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", "mode=755"]},
        {destination: "/sys", type: "sysfs", source: "sysfs", options: ["nosuid", "noexec", "nodev", "ro"]}
      ] + ($binds | map(bind(.; if . == $cwd then ["rw"] else ["ro"] end)))),
      linux: {
        namespaces: [{type: "pid"}, {type: "mount"}, {type: "ipc"}, {type: "uts"},
                     {type: "network", path: $netns}],
        resources: {devices: [{allow: false, access: "rwm"}]},
        maskedPaths: ["/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug"],
        readonlyPaths: ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]
      }
    }' -- "$@" | sed "s/\"$token\"/$memlock/g" >"$b/config.json"
}

# Is the agent the node's runs started alive?
oci_agent_alive() {
  local pid start
  [[ -f $RUN_DIR/agent.pid ]] && read -r pid start <"$RUN_DIR/agent.pid" && [[ $pid =~ ^[0-9]+$ ]] &&
    [[ $(awk '{print $22}' "/proc/$pid/stat" 2>/dev/null) == "$start" ]]
}

# oci_start_agent GRANTS_CSV: the node's agent on $RUN_DIR/agent.sock granting exactly
# GRANTS_CSV to the node's containers (gdrh-<node>, gdrh-<node>-rN); traces to
# GDR_HARNESS_LOG_DIR with DEBUG_ALL. Sets OCI_SOCK. Called under the node's run lock.
oci_start_agent() {
  local grants=$1 trace=false
  local -a args=()
  OCI_SOCK=$RUN_DIR/agent.sock
  if is_true "${DEBUG_ALL:-}"; then
    trace=true
    local tdir=${GDR_HARNESS_LOG_DIR:-/tmp}/gdrproxy-trace.$NODE
    mkdir -p "$tdir"
    args+=(--trace-dir "$tdir")
    say "DEBUG_ALL=1: gdrproxy traces the container's device calls into $tdir"
  fi
  jq -n --arg id "gdrh-$NODE" --arg grants "$grants" --argjson trace "$trace" \
    '($grants | split(",") | map(select(. != ""))) as $g |
     {version: 1, containers: [{match: {id: $id}, grants: $g, grants_from_metadata: true, trace: $trace},
                               {match: {id: ($id + "-r*")}, grants: $g, grants_from_metadata: true, trace: $trace}]}' \
    >"$RUN_DIR/agent.json"
  # Not holding the run lock's fd: the agent outlives this run when other ranks remain.
  "$GP" agent --socket "$OCI_SOCK" --ctl-socket "$RUN_DIR/agent.ctl" --config "$RUN_DIR/agent.json" \
    "${args[@]}" >"$RUN_DIR/agent.log" 2>&1 {RUN_LOCK_FD}>&- &
  local pid=$! i
  printf '%s %s\n' "$pid" "$(awk '{print $22}' "/proc/$pid/stat" 2>/dev/null)" >"$RUN_DIR/agent.pid"
  for ((i = 0; i < 100; i++)); do
    grep -q 'gdrproxy agent: serving' "$RUN_DIR/agent.log" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  sed 's/^/  agent: /' "$RUN_DIR/agent.log" >&2
  die "gdrproxy agent did not start on $OCI_SOCK (log above)" 125
}

# oci_shim_config GRANTS_CSV: the runtime shim's config for this container, $(oci_dir)/runtime.json
# (the operator file of `gdrproxy runtime`, written per container): the real runtime under the
# shim (runc or crun), the agent's listener
# OCI_SOCK, exactly GRANTS_CSV as the most the container may ask for, and the synthetic /sys only
# where something is granted (it models RDMA devices; plain rails have none). Prints its path.
oci_shim_config() {
  local grants=$1 cfg
  cfg=$(oci_dir)/runtime.json
  jq -n --arg rt "$(oci_real_runtime)" --arg sock "$OCI_SOCK" --arg grants "$grants" --arg id "$(oci_id)" \
    '($grants | split(",") | map(select(. != ""))) as $g |
     {version: 1, comment: ("gdr-harness: container " + $id), runtime: $rt, listener: $sock,
      grants: $g, sysfs: ($g | length > 0)}' >"$cfg" || return 1
  printf '%s' "$cfg"
}

# oci_prepare_container GRANTS_CSV ENVS_JSON CMD...: bundle, the agent, and the runtime shim's
# config. Sets OCI_CMD, the command line that runs the
# container in the foreground: always through `gdrproxy runtime`, which edits the bundle (seccomp
# listener, /dev nodes, device cgroup, synthetic /sys) and then execs the real runtime, so the
# harness never edits a bundle for devices itself.
oci_prepare_container() {
  local grants=$1 envs=$2
  shift 2
  local rt b cfg
  rt=$(oci_runtime)
  b=$(oci_dir)/bundle
  mkdir -p "$b" "$(oci_root)"
  printf '%s\n' "$rt" >"$(oci_dir)/runtime.name"
  oci_bundle "$b" "$envs" "$@" || die "cannot write the container's config.json in $b" 125
  if [[ -n ${GDR_HARNESS_AGENT_SOCKET:-} ]]; then
    OCI_SOCK=$GDR_HARNESS_AGENT_SOCKET
    [[ -S $OCI_SOCK ]] || die "GDR_HARNESS_AGENT_SOCKET=$OCI_SOCK is not a socket (is the agent running?)" 125
    say "the operator's agent on $OCI_SOCK serves the container $(oci_id) (its config decides)"
  elif oci_agent_alive; then
    OCI_SOCK=$RUN_DIR/agent.sock
    say "the node's gdrproxy agent on $OCI_SOCK serves the container $(oci_id)"
  else
    oci_start_agent "$grants"
    say "gdrproxy agent for node $NODE on $OCI_SOCK, granting ${grants:-nothing} to $(oci_id)"
  fi
  cfg=$(oci_shim_config "$grants") || die "cannot write the runtime shim's config in $(oci_dir)" 125
  # The shim takes the grant set from --grant (the harness's bundle asks for no device itself)
  # and the real runtime from its config.
  OCI_CMD=("$GP" runtime --config "$cfg")
  [[ -n $grants ]] && OCI_CMD+=(--grant "$grants")
  OCI_CMD+=(-- --root "$(oci_root)" run --bundle "$b" "$(oci_id)")
  say "container $(oci_id) by $rt through the runtime shim (gdrproxy runtime, config $cfg), bundle $b"
}

# oci_delete_container KEY: container KEY deleted (killed first) with the runtime that made it,
# its directory removed. Safe to call twice and after a killed run.
oci_delete_container() {
  local key=$1 rt dir
  dir=$(oci_dir "$key")
  [[ -d $dir ]] || return 0
  rt=$(cat "$dir/runtime.name" 2>/dev/null || true)
  if [[ -n $rt && -d $(oci_root "$key") ]] && command -v "$rt" >/dev/null 2>&1; then
    "$rt" --root "$(oci_root "$key")" delete -f "$(oci_id "$key")" >/dev/null 2>&1 || true
    if "$rt" --root "$(oci_root "$key")" state "$(oci_id "$key")" >/dev/null 2>&1; then
      say "cannot delete container $(oci_id "$key") ($rt --root $(oci_root "$key"))"
      return 1
    fi
  fi
  rm -rf -- "$dir"
}

# oci_stop_agent: the agent the node's runs started, stopped (SIGTERM, SIGKILL after 5 s).
oci_stop_agent() {
  local pid i
  if oci_agent_alive; then
    read -r pid _ <"$RUN_DIR/agent.pid"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$RUN_DIR/agent.pid"
}

# oci_cleanup_all: every container of the node's runs deleted and the agent stopped (teardown).
oci_cleanup_all() {
  local dir failed=0
  for dir in "$RUN_DIR"/ctr-*; do
    [[ -d $dir ]] || continue
    oci_delete_container "${dir##*/ctr-}" || failed=1
  done
  oci_stop_agent
  return "$failed"
}
