# shellcheck shell=bash disable=SC2154 # work, build, gdrproxy, testkit, lsms: set by tests/vm/lib.sh and lsm.sh
# The agent's BPF LSM judge (`gdrproxy agent --lsm on`) with Debian's runc, sourced by
# tests/vm/run-tests.sh after lsm.sh. One judge program serves every container and judges each
# by its cgroup v2, so a process `runc exec` adds, one moved to a cgroup below the container's and
# one forked before the agent read the handover are all judged. Stand-in NVIDIA nodes (as in
# lsm.sh: nvidia1 = /dev/kmsg); the container is granted nvidiactl, nvidia-uvm and nvidia0, and
# holds an fd of nvidia1 it did not open (runc --preserve-fds: fd 3):
#   agent-lsm-judged: TCGETS (never trapped) on that fd is refused in the kernel (EPERM) from the
#     container's init, from a process `runc exec`ed into it and from one the host moved into a
#     cgroup below the container's; the agent says it in the container's own line (device,
#     request, caller); `ctl list` says the container is judged; the same call from a process
#     outside the container, on the same device, is not refused;
#   agent-lsm-control: the same container under an agent without --lsm: the call reaches the
#     driver (what the judge adds).
# The one idea: the judge follows the container's cgroup, not the process the runtime named.

al_t0=$(now_ms)
al_work=$work/agent-lsm
mkdir -p "$al_work"
attack=$build/tests/security/attack_client
if [[ $(stat -f -c %T /sys/fs/cgroup 2>/dev/null) != cgroup2fs ]]; then
  mkdir -p /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup
fi

# al_container TAG LSM: under one stand-in /dev, an agent (--lsm LSM) and a runc container that
# holds nvidia1 as fd 3; prints what each step saw into $al_work/TAG.*.
# shellcheck disable=SC2016 # expanded by the inner bash
al_inner='
set -u
tag=$1 lsm=$2 w=$3 gp=$4 attack=$5 build=$6
id=lsm-$tag cg=/gdrproxy-vm-lsm/$tag
sock=$w/$tag.sock ctl=$w/$tag.ctl b=$w/$tag.bundle
echo "{\"version\": 1, \"containers\": [{\"match\": {\"id\": \"lsm-*\"}, \"grants\": [\"nvidiactl\", \"nvidia-uvm\", \"nvidia0\"]}]}" >"$w/$tag.json"
"$gp" agent --socket "$sock" --ctl-socket "$ctl" --config "$w/$tag.json" --lsm "$lsm" \
  --rail-state-dir "$w/$tag.rails" >"$w/$tag.agent" 2>&1 &
agent=$!
for i in $(seq 100); do [[ -S $sock && -S $ctl ]] && break; sleep 0.1; done
mkdir -p "$b/rootfs" && (cd "$b/rootfs" && mkdir -p usr etc proc dev tmp "${build#/}" && ln -s usr/bin bin &&
  ln -s usr/lib lib && ln -s usr/lib64 lib64 && ln -s usr/sbin sbin)
# The init waits for the host to move it below its cgroup (/tmp/moved), then asks.
jq -n --arg build "$build" --arg cg "$cg" --arg a "$attack" "{
  ociVersion: \"1.0.2\",
  process: {terminal: false, user: {uid: 0, gid: 0}, cwd: \"/\", noNewPrivileges: true,
    args: [\"sh\", \"-c\", (\$a + \" fdioctl 3 0x5401; \" + \$a + \" fdioctl 3 0x5401 fork; for i in \$(seq 100); do [ -e /tmp/moved ] && break; sleep 0.05; done; \" + \$a + \" fdioctl 3 0x5401 | sed s/^/moved-/; sleep 1\")],
    env: [\"PATH=/usr/sbin:/usr/bin:/sbin:/bin\"]},
  root: {path: \"rootfs\", readonly: true},
  mounts: [{destination: \"/proc\", type: \"proc\", source: \"proc\"},
           {destination: \"/dev\", type: \"tmpfs\", source: \"tmpfs\", options: [\"nosuid\", \"mode=755\"]},
           {destination: \"/tmp\", type: \"bind\", source: \"$w/$tag.tmp\", options: [\"rbind\"]},
           {destination: \"/usr\", type: \"bind\", source: \"/usr\", options: [\"rbind\", \"ro\"]},
           {destination: \"/etc\", type: \"bind\", source: \"/etc\", options: [\"rbind\", \"ro\"]},
           {destination: \$build, type: \"bind\", source: \$build, options: [\"rbind\", \"ro\"]}],
  linux: {cgroupsPath: \$cg, namespaces: [{type: \"pid\"}, {type: \"mount\"}, {type: \"ipc\"}, {type: \"uts\"}],
          resources: {devices: [{allow: false, access: \"rwm\"}]}}}" >"$b/config.json"
mkdir -p "$w/$tag.tmp"
"$gp" oci prepare "$b" --grant nvidiactl,nvidia-uvm,nvidia0 --listener "$sock" --no-sysfs >"$w/$tag.prepare" 2>&1 ||
  echo "prepare failed" >>"$w/$tag.problems"
exec 3<>/dev/nvidia1
timeout -k 5 60 runc --root "$w/$tag.runc" run --preserve-fds 1 --bundle "$b" "$id" >"$w/$tag.init" 2>&1 &
run=$!
pid=
for i in $(seq 100); do
  pid=$(runc --root "$w/$tag.runc" state "$id" 2>/dev/null | jq -r "select(.status == \"running\") | .pid")
  [[ -n $pid ]] && break
  sleep 0.05
done
timeout -k 5 20 runc --root "$w/$tag.runc" exec --preserve-fds 1 "$id" "$attack" fdioctl 3 0x5401 >"$w/$tag.exec" 2>&1
# A cgroup below the container'"'"'s: the judge looks at every ancestor.
sub=/sys/fs/cgroup$cg/below
mkdir -p "$sub" && echo "$pid" >"$sub/cgroup.procs" || echo "could not move $pid to $sub" >>"$w/$tag.problems"
"$gp" agent ctl list --ctl-socket "$ctl" >"$w/$tag.list" 2>&1
touch "$w/$tag.tmp/moved"
"$attack" fdioctl 3 0x5401 >"$w/$tag.outside" 2>&1
wait $run
echo "runc exit $?" >>"$w/$tag.init"
exec 3<&-
kill $agent; wait $agent
rmdir "$sub" /sys/fs/cgroup$cg /sys/fs/cgroup/gdrproxy-vm-lsm 2>/dev/null
true
'
al_container() {
  timeout -k 5 120 "$testkit" standin bash -c "$al_inner" al "$1" "$2" "$al_work" "$gdrproxy" "$attack" "$build" \
    >"$al_work/$1.log" 2>&1
}

if [[ ,$lsms, != *,bpf,* ]]; then
  record agent-lsm-judged FAIL 0 "the BPF LSM is not active in the guest (lsm: '$lsms')"
elif ! command -v runc >/dev/null; then
  record agent-lsm-judged FAIL 0 "runc is not installed in the guest"
else
  t0=$(now_ms)
  al_container judged on
  p=()
  f=$al_work/judged
  [[ -f $f.problems ]] && p+=("$(tr '\n' ' ' <"$f.problems")")
  grep -q "^fdioctl ERR EPERM" "$f.init" || p+=("init: $(head -c 200 "$f.init")")
  [[ $(grep -c "^fdioctl ERR EPERM" "$f.init") == 2 ]] || p+=("init's forked child not refused: $(head -c 200 "$f.init")")
  grep -q "^moved-fdioctl ERR EPERM" "$f.init" || p+=("a process below the container's cgroup not refused: $(head -c 300 "$f.init")")
  grep -q "^fdioctl ERR EPERM" "$f.exec" || p+=("runc exec: $(head -c 200 "$f.exec")")
  grep -q "^fdioctl ERR EPERM" "$f.outside" && p+=("refused outside the container")
  grep -q '"judged_in_kernel":"cgroup"' "$f.list" || p+=("ctl list: $(head -c 300 "$f.list")")
  grep -q "BPF LSM judge loaded" "$f.agent" || p+=("no judge loaded")
  said="\[lsm-judged\] denied IOCTL_0x00005401 on /dev/nvidia1 by pid [1-9][0-9]* (ns pid [1-9][0-9]*, attack_client) in the kernel (BPF LSM): device nvidia1 is not granted -> EPERM"
  grep -q "$said" "$f.agent" || p+=("the refusal was not said in the container's line")
  grep -q "container lsm-judged ended: .*, 4 refused in the kernel" "$f.agent" || p+=("the ended line does not count 4 refusals in the kernel")
  if ((${#p[@]} == 0)); then
    record agent-lsm-judged PASS $(($(now_ms) - t0)) "TCGETS on an inherited nvidia1 fd refused in the kernel: init, its child, runc exec, a process below its cgroup; not outside"
  else
    for x in agent init exec list prepare log; do [[ -f $f.$x ]] && show "$f.$x" "agent-lsm $x"; done
    record agent-lsm-judged FAIL $(($(now_ms) - t0)) "$(IFS='; '; echo "${p[*]}")"
  fi

  t0=$(now_ms)
  al_container control off
  f=$al_work/control
  if grep -q "^fdioctl " "$f.init" && ! grep -q "EPERM" "$f.init" "$f.exec"; then
    record agent-lsm-control PASS $(($(now_ms) - t0)) "without --lsm the same call reaches the driver: $(head -1 "$f.init")"
  else
    for x in agent init exec log; do [[ -f $f.$x ]] && show "$f.$x" "agent-lsm-control $x"; done
    record agent-lsm-control FAIL $(($(now_ms) - t0)) "init: $(head -c 200 "$f.init"); exec: $(head -c 100 "$f.exec")"
  fi
fi
log "agent BPF LSM checks took $((($(now_ms) - al_t0) / 1000)) s"
