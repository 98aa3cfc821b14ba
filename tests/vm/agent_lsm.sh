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
#   agent-lsm-pinned: the judge pinned in a bpffs (--lsm-pin) with the fd store: a profile made
#     with `oci prepare --kernel-allow --lsm-judged` lets RM_FREE run untrapped although nvidia1
#     is not granted (the container traps one call fewer than with --kernel-allow alone, as
#     `run --lsm` does) and an agent whose judge is not pinned kills such a container; RM_FREE on
#     the inherited nvidia1 fd is refused in the kernel; after a kill -9 of the agent the same
#     container is still judged while no agent runs, and again once the next agent took the
#     pinned judge over and re-attached it; the last agent, stopped with no container left,
#     unpins the judge; pins missing a link (one removed by hand) are replaced, not taken over.
#   agent-lsm-early: the window before the first handover. A createRuntime hook after the
#     agent's stops the agent (SIGSTOP) before it reads the runtime's handover; `runc exec`
#     then runs TCGETS on the inherited nvidia1 fd in the container's cgroup. With the judge
#     hook (`oci prepare --lsm-hook`) it is refused in the kernel (EPERM); without it, it reaches
#     the driver (what the hook adds). The agent refuses to judge a host process's cgroup.
#   agent-lsm-upgrade: an upgrade's older judge. An agent's pinned judge, left by a kill -9 while
#     its container runs, is moved aside as another build's would sit (its own version's name
#     gone); the next agent pins its own beside it and leaves the older one, which still refuses
#     the container's TCGETS on nvidia1; once the container is gone the agent unpins it.
# The one idea: the judge follows the container's cgroup, not the process the runtime named.

al_t0=$(now_ms)
al_work=$work/agent-lsm
mkdir -p "$al_work"
attack=$build/tests/security/attack_client
if [[ $(stat -f -c %T /sys/fs/cgroup 2>/dev/null) != cgroup2fs ]]; then
  mkdir -p /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup
fi

# What every container of these checks is, defined in each inner script (bash -c "$al_lib...").
# bundle_at B CGROUP SCRIPT [TMP]: a runc bundle B whose process runs `sh -c SCRIPT` in cgroup
# CGROUP, its root of mount points with the host's /usr, /etc and the build read-only, TMP (when
# given) as /tmp, every device denied by the device cgroup. Uses $build.
# shellcheck disable=SC2016 # expanded by the inner bash
al_lib='
bundle_at() {
  local b=$1 cg=$2 script=$3 tmp=${4:-}
  mkdir -p "$b/rootfs" && (cd "$b/rootfs" && mkdir -p usr etc proc dev tmp "${build#/}" && ln -s usr/bin bin &&
    ln -s usr/lib lib && ln -s usr/lib64 lib64 && ln -s usr/sbin sbin)
  jq -n --arg build "$build" --arg cg "$cg" --arg script "$script" --arg tmp "$tmp" "{
    ociVersion: \"1.0.2\",
    process: {terminal: false, user: {uid: 0, gid: 0}, cwd: \"/\", noNewPrivileges: true,
      args: [\"sh\", \"-c\", \$script], env: [\"PATH=/usr/sbin:/usr/bin:/sbin:/bin\"]},
    root: {path: \"rootfs\", readonly: true},
    mounts: ([{destination: \"/proc\", type: \"proc\", source: \"proc\"},
              {destination: \"/dev\", type: \"tmpfs\", source: \"tmpfs\", options: [\"nosuid\", \"mode=755\"]}] +
             (if \$tmp == \"\" then [] else [{destination: \"/tmp\", type: \"bind\", source: \$tmp, options: [\"rbind\"]}] end) +
             [{destination: \"/usr\", type: \"bind\", source: \"/usr\", options: [\"rbind\", \"ro\"]},
              {destination: \"/etc\", type: \"bind\", source: \"/etc\", options: [\"rbind\", \"ro\"]},
              {destination: \$build, type: \"bind\", source: \$build, options: [\"rbind\", \"ro\"]}]),
    linux: {cgroupsPath: \$cg, namespaces: [{type: \"pid\"}, {type: \"mount\"}, {type: \"ipc\"}, {type: \"uts\"}],
            resources: {devices: [{allow: false, access: \"rwm\"}]}}}" >"$b/config.json"
}
'

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
# The init waits for the host to move it below its cgroup (/tmp/moved), then asks.
mkdir -p "$w/$tag.tmp"
bundle_at "$b" "$cg" "$attack fdioctl 3 0x5401; $attack fdioctl 3 0x5401 fork; for i in \$(seq 100); do [ -e /tmp/moved ] && break; sleep 0.05; done; $attack fdioctl 3 0x5401 | sed s/^/moved-/; sleep 1" "$w/$tag.tmp"
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
# The pinned judge: agents and containers under one stand-in /dev, as above. Writes $w/pin.*.
# shellcheck disable=SC2016 # expanded by the inner bash
al_pinned='
set -u
w=$1 gp=$2 attack=$3 build=$4 tk=$5
sock=$w/pin.sock ctl=$w/pin.ctl store=$w/pin.store
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
pins=/sys/fs/bpf/gdrproxy-vm-$$
echo "{\"version\": 1, \"containers\": [{\"match\": {\"id\": \"pin-*\"}, \"grants\": [\"nvidiactl\", \"nvidia-uvm\", \"nvidia0\"]}]}" >"$w/pin.json"
agent() {  # LOG SOCKET [more options]
  local log=$1 s=$2
  shift 2
  "$gp" agent --socket "$s" --ctl-socket "$s.ctl" --config "$w/pin.json" --lsm on \
    --rail-state-dir "$w/pin.rails" "$@" >"$w/$log" 2>&1 &
  agent_pid=$!
  # Serving (its judge loaded and pinned), not only bound.
  for i in $(seq 100); do grep -q "gdrproxy agent: serving" "$w/$log" && return 0; sleep 0.1; done
  echo "agent $log did not start" >>"$w/pin.problems"
}
# bundle NAME SOCKET SCRIPT [prepare options]
bundle() {
  local name=$1 b=$w/$1.bundle s=$2 script=$3
  shift 3
  mkdir -p "$w/$name.tmp"
  bundle_at "$b" "/gdrproxy-vm-lsm/$name" "$script" "$w/$name.tmp"
  "$gp" oci prepare "$b" --grant nvidiactl,nvidia-uvm,nvidia0 --listener "$s" --agent-ctl "$s.ctl" --no-sysfs "$@" >"$w/$name.prepare" 2>&1 ||
    echo "prepare $name: $(tail -1 "$w/$name.prepare")" >>"$w/pin.problems"
}
run_ctr() {  # NAME: runc run, in the background ($run)
  timeout -k 5 90 runc --root "$w/pin.runc" run --preserve-fds 1 --bundle "$w/$1.bundle" "$1" >"$w/$1.out" 2>&1 &
  run=$!
}
waitfile() { for i in $(seq 300); do [[ -e $1 ]] && return 0; sleep 0.1; done; echo "no $1" >>"$w/pin.problems"; }
ex="$tk exercise nvidia /dev/nvidiactl /dev/nvidia-uvm"
exec 3<>/dev/nvidia1
# An agent whose judge is not pinned refuses a profile that needs one.
agent unpinned.agent "$w/pin-unpinned.sock"
# Untrapped requests need a deny-by-default base profile: every syscall named, then ALLOW.
python3 -c "import json, re, sys; names = sorted(set(re.findall(r\"#define __NR_(\\w+) \", open(\"/usr/include/x86_64-linux-gnu/asm/unistd_64.h\").read()))); json.dump({\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 1, \"syscalls\": [{\"names\": names, \"action\": \"SCMP_ACT_ALLOW\"}]}, open(sys.argv[1], \"w\"))" "$w/deny-default-base.json"
base=(--base "$w/deny-default-base.json")
bundle pin-unpinned "$w/pin-unpinned.sock" "$ex" --kernel-allow --lsm-judged "${base[@]}"
run_ctr pin-unpinned
wait $run
kill $agent_pid; wait $agent_pid
agent pin.agent1 "$sock" --lsm-pin "$pins" --fd-store "$store"
# The same exercise with --kernel-allow alone, then with --lsm-judged: trapped calls counted.
bundle pin-allow "$sock" "$ex" --kernel-allow "${base[@]}"
run_ctr pin-allow
wait $run
bundle pin-judged "$sock" "$ex" --kernel-allow --lsm-judged "${base[@]}"
run_ctr pin-judged
wait $run
# The long one: RM_FREE on nvidia1, then TCGETS while no agent runs (said on its stdout), then
# after the restart.
bundle pin-long "$sock" "$attack fdioctl 3 0xc0104629; touch /tmp/step1; while [ ! -e /tmp/killed ]; do sleep 0.05; done; $attack fdioctl 3 0x5401 | sed s/^/dead-/; while [ ! -e /tmp/restarted ]; do sleep 0.05; done; $attack fdioctl 3 0x5401 | sed s/^/again-/" --kernel-allow --lsm-judged "${base[@]}"
run_ctr pin-long
waitfile "$w/pin-long.tmp/step1"
kill -KILL $agent_pid; wait $agent_pid 2>/dev/null
ls "$pins"/* >"$w/pin.pins-while-dead" 2>&1
touch "$w/pin-long.tmp/killed"
# (No file is written meanwhile: an open for writing traps, and would wait for the next agent.)
for i in $(seq 300); do grep -q "^dead-" "$w/pin-long.out" && break; sleep 0.1; done
agent pin.agent2 "$sock" --lsm-pin "$pins" --fd-store "$store"
for i in $(seq 100); do grep -q "re-attached" "$w/pin.agent2" && break; sleep 0.1; done
touch "$w/pin-long.tmp/restarted"
wait $run
echo "runc exit $?" >>"$w/pin-long.out"
for i in $(seq 100); do grep -q "container pin-long ended" "$w/pin.agent2" && break; sleep 0.1; done
kill $agent_pid; wait $agent_pid
[[ -e $pins ]] && echo "pins left: $(ls "$pins" 2>&1)" >>"$w/pin.problems"
exec 3<&-
for h in $(pgrep -f -- "--fd-store $store"); do kill -KILL "$h"; done 2>/dev/null
# Pins missing a link (removed by hand: its program detached) are replaced, not taken over.
agent pin.agent3 "$w/pin3.sock" --lsm-pin "$pins"
kill -KILL $agent_pid; wait $agent_pid 2>/dev/null
rm -f "$pins"/*/link_0
agent pin.agent4 "$w/pin3.sock" --lsm-pin "$pins"
ls "$pins"/* >"$w/pin.pins-replaced" 2>&1
kill $agent_pid; wait $agent_pid
rmdir /sys/fs/cgroup/gdrproxy-vm-lsm/* /sys/fs/cgroup/gdrproxy-vm-lsm 2>/dev/null
true
'

# The window before the handover: agents with --lsm on under one stand-in /dev; writes
# $w/early-{on,off}.* and $w/early.host.
# shellcheck disable=SC2016 # expanded by the inner bash
al_early='
set -u
w=$1 gp=$2 attack=$3 build=$4
sock=$w/early.sock ctl=$w/early.ctl
echo "{\"version\": 1, \"containers\": [{\"match\": {\"id\": \"early-*\"}, \"grants\": [\"nvidiactl\", \"nvidia-uvm\", \"nvidia0\"]}]}" >"$w/early.json"
"$gp" agent --socket "$sock" --ctl-socket "$ctl" --config "$w/early.json" --lsm on \
  --rail-state-dir "$w/early.rails" >"$w/early.agent" 2>&1 &
agent=$!
for i in $(seq 100); do grep -q "gdrproxy agent: serving" "$w/early.agent" && break; sleep 0.1; done
# A host process (this shell) is no container: its cgroup is not judged.
"$gp" agent ctl --ctl-socket "$ctl" judge-pending $$ host >"$w/early.host" 2>&1
exec 3<>/dev/nvidia1
for tag in on off; do
  id=early-$tag b=$w/early-$tag.bundle
  bundle_at "$b" "/gdrproxy-vm-lsm/early-$tag" "sleep 30"
  hook=()
  [[ $tag == on ]] && hook=(--lsm-hook --agent-ctl "$ctl")
  "$gp" oci prepare "$b" --grant nvidiactl,nvidia-uvm,nvidia0 --listener "$sock" --no-sysfs "${hook[@]}" \
    >"$w/early-$tag.prepare" 2>&1 || echo "prepare $tag failed" >>"$w/early.problems"
  # After the agent'"'"'s hook (if any): the agent stops before it reads the handover.
  jq --arg stop "kill -STOP $agent" ".hooks.createRuntime += [{path: \"/bin/sh\", args: [\"sh\", \"-c\", \$stop]}]" \
    "$b/config.json" >"$b/c.json" && mv "$b/c.json" "$b/config.json"
  timeout -k 5 30 runc --root "$w/early.runc" create --preserve-fds 1 --bundle "$b" "$id" >"$w/early-$tag.create" 2>&1 ||
    echo "runc create $tag failed" >>"$w/early.problems"
  timeout -k 5 20 runc --root "$w/early.runc" exec --preserve-fds 1 "$id" "$attack" fdioctl 3 0x5401 >"$w/early-$tag.exec" 2>&1
  kill -CONT $agent
  for i in $(seq 100); do grep -q "container $id: process .*rule" "$w/early.agent" && break; sleep 0.1; done
  "$gp" agent ctl --ctl-socket "$ctl" list >"$w/early-$tag.list" 2>&1
  runc --root "$w/early.runc" delete -f "$id" >/dev/null 2>&1
  for i in $(seq 100); do grep -q "container $id ended" "$w/early.agent" && break; sleep 0.1; done
done
exec 3<&-
kill $agent; wait $agent
rmdir /sys/fs/cgroup/gdrproxy-vm-lsm/early-* 2>/dev/null
true
'

# An upgrade's older judge; writes $w/up.*.
# shellcheck disable=SC2016 # expanded by the inner bash
al_upgrade='
set -u
w=$1 gp=$2 attack=$3 build=$4
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
pins=/sys/fs/bpf/gdrproxy-vm-up-$$ sock=$w/up.sock b=$w/up.bundle
echo "{\"version\": 1, \"containers\": [{\"match\": {\"id\": \"up-*\"}, \"grants\": [\"nvidiactl\", \"nvidia-uvm\", \"nvidia0\"]}]}" >"$w/up.json"
start() {  # LOG
  "$gp" agent --socket "$sock" --ctl-socket "$sock.ctl" --config "$w/up.json" --lsm on \
    --lsm-pin "$pins" --rail-state-dir "$w/up.rails" >"$w/$1" 2>&1 &
  agent=$!
  for i in $(seq 100); do grep -q "gdrproxy agent: serving" "$w/$1" && return 0; sleep 0.1; done
  echo "agent $1 did not start" >>"$w/up.problems"
}
start up.agent1
script="touch /tmp/ready; while [ ! -e /tmp/older ]; do sleep 0.05; done; $attack fdioctl 3 0x5401 | sed s/^/older-/; while [ ! -e /tmp/end ]; do sleep 0.05; done"
mkdir -p "$w/up.tmp"
bundle_at "$b" /gdrproxy-vm-lsm/up "$script" "$w/up.tmp"
"$gp" oci prepare "$b" --grant nvidiactl,nvidia-uvm,nvidia0 --listener "$sock" --no-sysfs >"$w/up.prepare" 2>&1 ||
  echo "prepare failed" >>"$w/up.problems"
exec 3<>/dev/nvidia1
timeout -k 5 60 runc --root "$w/up.runc" run --preserve-fds 1 --bundle "$b" up-1 >"$w/up.out" 2>&1 &
run=$!
for i in $(seq 300); do [[ -e $w/up.tmp/ready ]] && break; sleep 0.1; done
kill -KILL $agent; wait $agent 2>/dev/null
# As an upgrade leaves it: the judge under another version'"'"'s name.
mv "$pins"/* "$pins/older-build" 2>>"$w/up.problems"
start up.agent2
ls "$pins" >"$w/up.pins-during" 2>&1
touch "$w/up.tmp/older"
for i in $(seq 100); do grep -q "^older-" "$w/up.out" && break; sleep 0.1; done
touch "$w/up.tmp/end"
wait $run
for i in $(seq 50); do grep -q "its last judged cgroup is gone" "$w/up.agent2" && break; sleep 0.1; done
ls "$pins" >"$w/up.pins-after" 2>&1
exec 3<&-
kill $agent; wait $agent
rmdir /sys/fs/cgroup/gdrproxy-vm-lsm/up 2>/dev/null
true
'

al_container() {
  timeout -k 5 120 "$testkit" standin bash -c "$al_lib$al_inner" al "$1" "$2" "$al_work" "$gdrproxy" "$attack" "$build" \
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
if [[ ,$lsms, == *,bpf,* ]] && command -v runc >/dev/null; then
  t0=$(now_ms)
  timeout -k 5 240 "$testkit" standin bash -c "$al_lib$al_pinned" al "$al_work" "$gdrproxy" "$attack" "$build" "$testkit" \
    >"$al_work/pin.log" 2>&1
  f=$al_work
  p=()
  [[ -f $f/pin.problems ]] && p+=("$(tr '\n' ' ' <"$f/pin.problems")")
  grep -q "refused: its profile lets ioctl 0x[0-9a-f]* run untrapped.*pinned BPF LSM judge.*(killed)" "$f/unpinned.agent" ||
    p+=("an unpinned judge did not refuse the --lsm-judged profile")
  trapped() { sed -n "s/.*container pin-$1 ended: \([0-9]*\) ioctl.*/\1/p" "$f/pin.agent1"; }
  n_allow=$(trapped allow) n_judged=$(trapped judged)
  [[ -n $n_allow && -n $n_judged ]] && ((n_judged == n_allow - 1)) ||
    p+=("trapped ioctls: --kernel-allow alone ${n_allow:-?}, --lsm-judged ${n_judged:-?} (expected one fewer)")
  grep -q "^fdioctl ERR EPERM" "$f/pin-long.out" || p+=("RM_FREE on nvidia1 not refused: $(head -c 200 "$f/pin-long.out")")
  grep -q "^dead-fdioctl ERR EPERM" "$f/pin-long.out" || p+=("not judged while no agent ran: $(head -c 300 "$f/pin-long.out")")
  grep -q "^again-fdioctl ERR EPERM" "$f/pin-long.out" || p+=("not judged after the restart: $(head -c 300 "$f/pin-long.out")")
  grep -q "link_0" "$f/pin.pins-while-dead" || p+=("no pinned link while no agent ran: $(head -c 200 "$f/pin.pins-while-dead")")
  grep -q "and pinned at" "$f/pin.agent1" || p+=("agent 1 did not pin its judge")
  grep -q "BPF LSM judge taken over from .*: 1 cgroup(s)" "$f/pin.agent2" || p+=("agent 2 did not take the judge over")
  grep -q "container pin-long: re-attached" "$f/pin.agent2" || p+=("agent 2 did not re-attach the container")
  grep -q "BPF LSM judge unpinned" "$f/pin.agent2" || p+=("agent 2 did not unpin at its stop")
  grep -q "and pinned at" "$f/pin.agent4" && grep -q "^link_0$" "$f/pin.pins-replaced" ||
    p+=("pins missing a link were not replaced: $(head -c 200 "$f/pin.agent4")")
  if ((${#p[@]} == 0)); then
    record agent-lsm-pinned PASS $(($(now_ms) - t0)) "trapped ioctls $n_allow -> $n_judged with --lsm-judged; unpinned agent kills it; judged through a kill -9 and after the takeover; unpinned at the end; pins missing a link replaced"
  else
    for x in pin.log pin.agent1 pin.agent2 unpinned.agent pin-long.out pin-judged.out pin-allow.out; do [[ -f $f/$x ]] && show "$f/$x" "agent-lsm-pinned $x"; done
    record agent-lsm-pinned FAIL $(($(now_ms) - t0)) "$(IFS='; '; echo "${p[*]}")"
  fi
fi
if [[ ,$lsms, == *,bpf,* ]] && command -v runc >/dev/null; then
  t0=$(now_ms)
  timeout -k 5 120 "$testkit" standin bash -c "$al_lib$al_early" al "$al_work" "$gdrproxy" "$attack" "$build" \
    >"$al_work/early.log" 2>&1
  f=$al_work
  p=()
  [[ -f $f/early.problems ]] && p+=("$(tr '\n' ' ' <"$f/early.problems")")
  grep -q "^fdioctl ERR EPERM" "$f/early-on.exec" || p+=("with the hook, not refused before the handover: $(head -c 200 "$f/early-on.exec")")
  grep -q "^fdioctl " "$f/early-off.exec" && ! grep -q "EPERM" "$f/early-off.exec" ||
    p+=("without the hook the call did not reach the driver (the window was not shown): $(head -c 200 "$f/early-off.exec")")
  grep -q "container early-on (pid [0-9]*): judged in the kernel from its creation" "$f/early.agent" || p+=("the agent did not judge early-on from its creation")
  grep -q "judged from its creation, before its handover -> EPERM\|\[early-on\] denied IOCTL_0x00005401 on /dev/nvidia1" "$f/early.agent" ||
    p+=("the refusal before the handover was not said")
  grep -q '"id":"early-on".*"judged_in_kernel":"cgroup"' "$f/early-on.list" || p+=("early-on not judged after its handover: $(head -c 300 "$f/early-on.list")")
  grep -q "shares the agent's mount namespace" "$f/early.host" || p+=("a host process's cgroup was not refused: $(head -c 200 "$f/early.host")")
  if ((${#p[@]} == 0)); then
    record agent-lsm-early PASS $(($(now_ms) - t0)) "before the handover: TCGETS on an inherited nvidia1 fd refused with the judge hook, reaches the driver without it; a host process refused"
  else
    for x in early.log early.agent early-on.exec early-off.exec early-on.create early-on.prepare; do [[ -f $f/$x ]] && show "$f/$x" "agent-lsm-early $x"; done
    record agent-lsm-early FAIL $(($(now_ms) - t0)) "$(IFS='; '; echo "${p[*]}")"
  fi
fi
if [[ ,$lsms, == *,bpf,* ]] && command -v runc >/dev/null; then
  t0=$(now_ms)
  timeout -k 5 120 "$testkit" standin bash -c "$al_lib$al_upgrade" al "$al_work" "$gdrproxy" "$attack" "$build" \
    >"$al_work/up.log" 2>&1
  f=$al_work
  p=()
  [[ -s $f/up.problems ]] && p+=("$(tr '\n' ' ' <"$f/up.problems")")
  grep -q "BPF LSM judge of another build pinned at .*/older-build still judges 1 cgroup(s)" "$f/up.agent2" || p+=("the next agent did not leave the older judge")
  grep -q "^older-build$" "$f/up.pins-during" || p+=("the older judge's pins went while its container ran: $(tr '\n' ' ' <"$f/up.pins-during")")
  grep -q "^older-fdioctl ERR EPERM" "$f/up.out" || p+=("the older judge did not refuse: $(head -c 200 "$f/up.out")")
  grep -q "older-build: its last judged cgroup is gone: unpinned" "$f/up.agent2" || p+=("the older judge was not unpinned after its container")
  grep -q "older-build" "$f/up.pins-after" && p+=("the older judge's pins are still there")
  if ((${#p[@]} == 0)); then
    record agent-lsm-upgrade PASS $(($(now_ms) - t0)) "an older build's pinned judge left while its container ran (TCGETS refused), unpinned once it was gone"
  else
    for x in up.log up.agent1 up.agent2 up.out; do [[ -f $f/$x ]] && show "$f/$x" "agent-lsm-upgrade $x"; done
    record agent-lsm-upgrade FAIL $(($(now_ms) - t0)) "$(IFS='; '; echo "${p[*]}")"
  fi
fi
log "agent BPF LSM checks took $((($(now_ms) - al_t0) / 1000)) s"
