# shellcheck shell=bash
# gdr-harness's container path: `gdr-harness run` with GDR_HARNESS_RUNTIME=runc, crun or podman
# runs CMD as an OCI container of that runtime, served by `gdrproxy agent`, instead of under
# `gdrproxy run` in namespaces of the harness's own. Sourced by harness/gdr-harness (it needs its
# say/die, join_csv, GP, NODE, STATE, RUN_DIR and CTR_NETNS). Removing a container and stopping
# the agent is `gdrproxy harness` (harness/containers.cc), whoever ends the node's runs.
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

# The runtime (GDR_HARNESS_RUNTIME; "auto": podman where installed, else runc, else crun); per
# container (OWNER_KEY: node, or rank-N with one container per rank) its directory (bundle, the
# runtime's state, the shim's config) and id: gdrh-<node>, or gdrh-<node>-rN.
oci_runtime() {
  local rt=${GDR_HARNESS_RUNTIME:-} c
  if [[ $rt == auto ]]; then
    rt=''
    for c in podman runc crun; do
      if command -v "$c" >/dev/null 2>&1; then rt=$c; break; fi
    done
    [[ -n $rt ]] || rt=auto
  fi
  printf '%s' "$rt"
}
# The OCI runtime that does the work under the shim: runc or crun itself, or under podman
# GDR_HARNESS_PODMAN_RUNTIME (default runc where installed, else crun).
oci_real_runtime() {
  local rt
  rt=$(oci_runtime)
  if [[ $rt != podman ]]; then
    printf '%s' "$rt"
  elif [[ -n ${GDR_HARNESS_PODMAN_RUNTIME:-} ]]; then
    printf '%s' "$GDR_HARNESS_PODMAN_RUNTIME"
  elif command -v runc >/dev/null 2>&1; then
    printf runc
  else
    printf crun
  fi
}
oci_dir() { printf '%s/ctr-%s' "$RUN_DIR" "${1:-$OWNER_KEY}"; }
oci_root() { printf '%s/runtime' "$(oci_dir "${1:-}")"; }
oci_id() {
  local key=${1:-$OWNER_KEY}
  if [[ $key == node ]]; then printf 'gdrh-%s' "$NODE"; else printf 'gdrh-%s-r%s' "$NODE" "${key#rank-}"; fi
}

# Is the requested runtime one this path drives? Dies otherwise (before anything is changed).
oci_check_runtime() {
  local rt real
  rt=$(oci_runtime)
  case $rt in
    runc | crun | podman) ;;
    auto) die "GDR_HARNESS_RUNTIME=auto, but none of podman, runc and crun is installed (apt-get install podman runc)" 125 ;;
    *) die "GDR_HARNESS_RUNTIME='$rt': the container path drives podman, runc or crun, or auto (unset it to run under gdrproxy run)" 125 ;;
  esac
  command -v "$rt" >/dev/null 2>&1 || die "GDR_HARNESS_RUNTIME=$rt, but $rt is not installed (apt-get install $rt)" 125
  real=$(oci_real_runtime)
  if [[ $rt == podman ]]; then
    case $real in
      runc | crun) ;;
      *) die "GDR_HARNESS_PODMAN_RUNTIME='$real': podman's runtime under the shim is runc or crun" 125 ;;
    esac
    command -v "$real" >/dev/null 2>&1 || die "GDR_HARNESS_RUNTIME=podman runs $real under the runtime shim, but $real is not installed (apt-get install runc)" 125
    if [[ -n ${GDR_HARNESS_IMAGE:-} && -n ${GDR_HARNESS_ROOTFS:-} ]]; then
      die "GDR_HARNESS_IMAGE and GDR_HARNESS_ROOTFS both set: give podman an image or an unpacked root file system, not both" 125
    fi
  elif [[ -n ${GDR_HARNESS_IMAGE:-} ]]; then
    die "GDR_HARNESS_IMAGE is podman's (GDR_HARNESS_RUNTIME=podman); $rt takes an unpacked root file system in GDR_HARNESS_ROOTFS" 125
  fi
  if [[ $real == crun && $(stat -f -c %T /sys/fs/cgroup 2>/dev/null) != cgroup2fs ]]; then
    die "GDR_HARNESS_RUNTIME=$rt: crun drives cgroup v2 only, and /sys/fs/cgroup here is not a cgroup2 hierarchy (v1 controllers beside it); use runc" 125
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

# podman and its global options, one a line: without systemd as init there is no systemd cgroup
# manager to ask.
oci_podman() {
  printf 'podman\n'
  [[ -d /run/systemd/system ]] || printf -- '--cgroup-manager\ncgroupfs\n'
}

# oci_podman_cmd SHIM_CONFIG GRANTS_CSV ENVS_JSON CMD...: OCI_CMD, a `podman run` of CMD whose OCI
# runtime is the shim (a link named gdrproxy-runtime in the container's directory, its config
# given as the runtime flag gdrproxy-config, since podman passes its runtime no environment).
# The container is the runc path's: the rail namespace by path (--network ns:), the same
# environment, user, caps, read-only root (GDR_HARNESS_IMAGE, GDR_HARNESS_ROOTFS or the host's
# /usr, /etc, /opt), the working directory bound read-write, the harness's own rlimits, no pids
# limit; the granted devices as --device, from which the shim derives the grant set.
oci_podman_cmd() {
  local cfg=$1 grants=$2 envs=$3
  shift 3
  local link cwd d name val
  link=$(oci_dir)/gdrproxy-runtime
  ln -sfn "$GP" "$link"
  cwd=$(pwd -P)
  local -a g
  mapfile -t g < <(oci_podman)
  g+=(--runtime "$link" --runtime-flag "gdrproxy-config=$cfg" run --rm --name "$(oci_id)"
    --network "ns:$CTR_NETNS" --hostname "$(uname -n)" --systemd=false --pull never
    --user "${GDR_HARNESS_USER:-0:0}" --cap-drop all --cap-add "$(join_csv "${OCI_CAPS[@]}")"
    --security-opt no-new-privileges --pids-limit=-1 --read-only)
  # The harness's own limits: podman's defaults may be above this node's hard limits, which the
  # runtime, without CAP_SYS_RESOURCE, cannot raise. RDMA memory registration pins pages, so
  # memlock is the hard limit for both. podman hands its runtime at most kernel.pid_max
  # processes, so nproc is capped there (no container can have more anyway).
  local ml nf nfh np pidmax
  ml=$(ulimit -H -l)
  if [[ $ml == unlimited ]]; then ml=-1; else ml=$((ml * 1024)); fi
  nf=$(ulimit -S -n) nfh=$(ulimit -H -n) np=$(ulimit -H -u)
  [[ $nf == unlimited ]] && nf=1048576
  [[ $nfh == unlimited ]] && nfh=1048576
  pidmax=$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 32768)
  if [[ $np == unlimited ]] || ((np > pidmax)); then np=$pidmax; fi
  g+=(--ulimit "memlock=$ml:$ml" --ulimit "nofile=$nf:$nfh" --ulimit "nproc=$np:$np")
  for d in ${grants//,/ }; do g+=(--device "/dev/infiniband/$d"); done
  while IFS= read -r d; do
    name=${d%%=*} val=${d#*=}
    g+=(--env "$name=$val")
  done < <(jq -r '.[]' <<<"$envs")
  if [[ $cwd != / ]]; then g+=(--volume "$cwd:$cwd:rw" --workdir "$cwd"); fi
  if [[ -n ${GDR_HARNESS_IMAGE:-} ]]; then
    g+=("$GDR_HARNESS_IMAGE")
  elif [[ -n ${GDR_HARNESS_ROOTFS:-} ]]; then
    g+=(--rootfs "$(cd "$GDR_HARNESS_ROOTFS" && pwd -P)")
  else
    local root
    root=$(oci_dir)/rootfs
    while IFS= read -r d; do g+=(--volume "$d:$d:ro"); done < <(oci_empty_root "$root")
    g+=(--rootfs "$root")
  fi
  # shellcheck disable=SC2034 # run by gdr-harness's cmd_run
  OCI_CMD=("${g[@]}" "$@")
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

# Is the agent the node's runs started alive? (agent.pid is an owner file: pid and start time.)
oci_agent_alive() {
  [[ -f $RUN_DIR/agent.pid ]] && "$GP" harness owner "$RUN_DIR/agent.pid"
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
  # Matched on the listenerMetadata line the shim writes from each container's runtime.json
  # (oci_shim_config), not on the runtime's container id: under podman that id is podman's own.
  jq -n --arg id "gdrh-$NODE" --arg grants "$grants" --argjson trace "$trace" \
    '($grants | split(",") | map(select(. != ""))) as $g |
     {version: 1, containers: [{match: {metadata: ("gdr-harness-container=" + $id + "\n*")}, grants: $g,
                                grants_from_metadata: true, trace: $trace},
                               {match: {metadata: ("gdr-harness-container=" + $id + "-r*")}, grants: $g,
                                grants_from_metadata: true, trace: $trace}]}' \
    >"$RUN_DIR/agent.json"
  # Not holding the run lock's fd: the agent outlives this run when other ranks remain.
  "$GP" agent --socket "$OCI_SOCK" --ctl-socket "$RUN_DIR/agent.ctl" --config "$RUN_DIR/agent.json" \
    "${args[@]}" >"$RUN_DIR/agent.log" 2>&1 {RUN_LOCK_FD}>&- &
  local pid=$! i
  "$GP" harness owner "$RUN_DIR/agent.pid" --pid "$pid" || die "gdrproxy agent exited at once (log: $RUN_DIR/agent.log)" 125
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
# shim (runc or crun; podman's OCI runtime with GDR_HARNESS_RUNTIME=podman), the agent's listener
# OCI_SOCK, exactly GRANTS_CSV as the most the container may ask for, the synthetic /sys only
# where something is granted and the plan has one (it models PCI-backed RDMA devices; plain rails
# and soft-RoCE devices have none, and the container gets a fresh sysfs), and the
# listenerMetadata line gdr-harness-container=<id> by which the node's agent knows the container
# whatever id its runtime gives it. Prints its path.
oci_shim_config() {
  local grants=$1 cfg
  cfg=$(oci_dir)/runtime.json
  local sysfs=false
  jq -e '.sysfs != null' "$PLAN" >/dev/null 2>&1 && sysfs=true
  jq -n --arg rt "$(oci_real_runtime)" --arg sock "$OCI_SOCK" --arg grants "$grants" --arg id "$(oci_id)" \
    --argjson sysfs "$sysfs" \
    '($grants | split(",") | map(select(. != ""))) as $g |
     {version: 1, comment: ("gdr-harness: container " + $id), runtime: $rt, listener: $sock,
      grants: $g, sysfs: ($sysfs and ($g | length > 0)), metadata: ("gdr-harness-container=" + $id)}' >"$cfg" || return 1
  printf '%s' "$cfg"
}

# oci_prepare_container GRANTS_CSV ENVS_JSON CMD...: bundle (runc/crun) or podman's arguments,
# the agent, and the runtime shim's config. Sets OCI_CMD, the command line that runs the
# container in the foreground: always through `gdrproxy runtime`, which edits the bundle (seccomp
# listener, /dev nodes, device cgroup, synthetic /sys) and then execs the real runtime, so the
# harness never edits a bundle for devices itself.
oci_prepare_container() {
  local grants=$1 envs=$2
  shift 2
  local rt b cfg
  rt=$(oci_runtime)
  b=$(oci_dir)/bundle
  mkdir -p "$(oci_dir)"
  printf '%s\n' "$rt" >"$(oci_dir)/runtime.name"
  if [[ $rt != podman ]]; then
    mkdir -p "$b" "$(oci_root)"
    oci_bundle "$b" "$envs" "$@" || die "cannot write the container's config.json in $b" 125
  fi
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
  if [[ $rt == podman ]]; then
    oci_podman_cmd "$cfg" "$grants" "$envs" "$@"
    say "container $(oci_id) by podman, its OCI runtime the shim (gdrproxy runtime, config $cfg) over $(oci_real_runtime)"
    return 0
  fi
  # The shim takes the grant set from --grant (the harness's bundle asks for no device itself)
  # and the real runtime from its config.
  OCI_CMD=("$GP" runtime --config "$cfg")
  [[ -n $grants ]] && OCI_CMD+=(--grant "$grants")
  OCI_CMD+=(-- --root "$(oci_root)" run --bundle "$b" "$(oci_id)")
  say "container $(oci_id) by $rt through the runtime shim (gdrproxy runtime, config $cfg), bundle $b"
}
