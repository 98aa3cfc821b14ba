#!/usr/bin/env bash
# Docker (Debian 12's docker.io: dockerd 20.10, containerd 1.6) with a daemon.json `runtimes`
# entry naming the gdrproxy-runtime link: `docker run --runtime gdrproxy --device ...` goes
# dockerd -> containerd -> containerd-shim-runc-v2 -> gdrproxy-runtime (the shim: prepares the
# bundle, execs runc) -> runc, and `gdrproxy agent` serves the container's listener. The idea
# not to miss: Docker passes its own seccomp profile, global flags (--root, --log, --log-format
# json, --systemd-cgroup) and verbs (create --pid-file, start, state, kill, delete, exec
# --process --detach, ...) exactly as it does to runc, so each must reach runc intact while the
# agent serves every process of the container, the one `docker exec` starts included. Checked:
#   - the container sees uverbs1 alone, its uverbs1 ioctls are trapped and traced,
#     uverbs0 does not exist for it;
#   - Docker's default seccomp profile stays in force (unshare -U is refused) beside the notify
#     rules;
#   - docker exec joins the container's session (its ioctls in the same trace);
#   - docker pause/unpause, top and the shim called as containerd calls it (state, ps --format
#     json, update, features) pass through to runc;
#   - docker restart, stop, kill and rm -f end the container's session in the agent;
#   - rails: a container granted uverbs0 gets two veth rails (the runtime config's "rails", the
#     netdevs of uverbs0's device in a constructed sysfs) moved into its network namespace by the
#     createRuntime hook the shim writes; after docker stop, kill, rm -f and restart (whose stop
#     half gives them back, or its start could not move them in again), and after a `ctr run`
#     container, the host's addresses, routes, rules and the rails' sysctls read back as before
#     and the hooks' state directory holds nothing. Docker names no network namespace path in
#     the bundle (libnetwork's prestart hook pins the namespace, and releases it only after the
#     runtime's delete), ctr none at all: the hook pins it itself, so poststop finds the rails;
#   - two containers at once with different grants: each refused the other's node, each with its
#     own trace;
#   - a device the runtime config does not grant: the shim's refusal reaches the docker CLI
#     through runc's JSON log, as runc's own errors do.
# gdrproxy runs as an operator installs it: `cmake --install` of the build into the test's own
# directory (DESTDIR), the installed gdrproxy (agent, hooks), its installed gdrproxy-runtime link
# (Docker's and ctr's runtime) and the installed etc/gdrproxy/{agent,runtime}.json, edited as an
# operator edits them; the build tree's binary only makes the stand-in device nodes.
# Test-rig parts, named as such: stand-in device nodes, images made offline with `docker import`
# of a busybox rootfs, no network (--network none), the vfs storage driver.
# Usage: docker_test.sh GDRPROXY ATTACK_CLIENT BUILD_DIR   (root, docker.io; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
A=$(realpath "$2")
B=$(realpath "$3")
BENCH=$(realpath "$(dirname "$A")/../bench/ioctl_bench")
command -v dockerd >/dev/null && [[ -x /usr/bin/docker ]] ||
  { echo "SKIP: docker.io is not installed (scripts/setup.sh installs it)"; exit 77; }
# shellcheck source=tests/oci/lib.sh
. "$(dirname "$0")/lib.sh"
oci_enter "$GP" net "$0" "$@"
WORK=$(mktemp -d /tmp/gdrproxy-docker.XXXXXX)
chmod 755 "$WORK"
AGENT_PID='' DOCKERD_PID=''
cleanup() {
  oci_dockerd_stop
  [[ -n $AGENT_PID ]] && kill -KILL "$AGENT_PID" 2>/dev/null
  umount -R "$WORK" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
ip link set lo up

# The install: prefix and config directory as the build configured them, under $WORK/inst.
DESTDIR=$WORK/inst cmake --install "$B" >"$WORK/install.log" 2>&1 || { cat "$WORK/install.log"; fail "cmake --install"; }
BIN=$WORK/inst$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$B/CMakeCache.txt")/bin
ETC=$WORK/inst$(sed -n 's/^GDRPROXY_ETC_DIR:PATH=//p' "$B/CMakeCache.txt")
GP=$BIN/gdrproxy RT=$BIN/gdrproxy-runtime
[[ -x $GP && $(readlink "$RT") == gdrproxy && -f $ETC/agent.json && -f $ETC/runtime.json ]] ||
  fail "the install has no gdrproxy, gdrproxy-runtime link or etc/gdrproxy configs"
jq -e '.grants == []' "$ETC/runtime.json" >/dev/null && jq -e '.containers == []' "$ETC/agent.json" >/dev/null ||
  fail "the installed configs grant devices before the operator edits them"

# Two veth rails (this test's network namespace is the host) and a constructed sysfs in which
# they are the netdevs of uverbs0's RDMA device (test rig: a veth backs no RDMA device, hence
# allow_plain_rails below).
oci_veth_rails
d=$WORK/rsys/class/infiniband/rxe_rails
mkdir -p "$d/ports/1" "$d/device/infiniband_verbs/uverbs0" "$d/device/net/rail0" "$d/device/net/rail1"
settle() { for i in $(seq 50); do [[ -z $(ip -6 addr show tentative) ]] && break; sleep 0.1; done; }
host_net() {
  settle
  ip -d addr show
  ip route show table all | sort  # the set of routes; the kernel orders its own link-local ones by when a link came up
  ip rule show
  sysctl -a 2>/dev/null | grep -E '\.rail[01]\.' | sort
}
host_net >"$WORK/net.before"
STATE=$WORK/run/rails  # the hooks' journals: the directory the agent sweeps (lib.sh)
# rails_back WHEN: the host's network reads back as before, and the hooks keep nothing.
rails_back() {
  host_net >"$WORK/net.after"
  diff -u "$WORK/net.before" "$WORK/net.after" || fail "after $1, the host's network differs from before"
  [[ -z $(ls -A "$STATE" 2>/dev/null) ]] || fail "after $1, the rail state directory holds: $(ls -A "$STATE")"
}
# rails_in CONTAINER WHEN: both rails, configured, in the container, and not on the host.
rails_in() {
  docker exec "$1" ip -o -4 addr show >"$WORK/$1.addr" 2>&1
  expect "$WORK/$1.addr" "rail0 +inet 198\.51\.100\.10/24"
  expect "$WORK/$1.addr" "rail1 +inet 198\.51\.100\.11/24"
  ip link show rail0 >/dev/null 2>&1 && fail "after $2, rail0 is still on the host"
}

mkdir -p "$WORK/traces"
# The operator's edits: the agent's rule (its config is the installed file), the runtime config's
# grants and this rig's sockets (the shipped default keeps its runtime, runc).
OCI_AGENT_CONFIG=$ETC/agent.json oci_start_agent "$(jq '.containers = [{match: {id: "*"},
  grants: ["uverbs0", "uverbs1", "rdma_cm"], grants_from_metadata: true, trace: true}]' "$ETC/agent.json")" \
  --trace-dir "$WORK/traces"
[[ $(readlink "/proc/$AGENT_PID/exe") == "$GP" ]] || fail "the agent is not the installed binary"
jq --arg s "$SOCK" --arg sys "$WORK/rsys" --arg st "$STATE" '.listener = $s | .grants = ["uverbs0", "uverbs1"] |
  .sysfs = false | .rails = true | .sysfs_root = $sys | .allow_plain_rails = true | .rail_state_dir = $st' "$ETC/runtime.json" \
  >"$WORK/rt.json" && mv "$WORK/rt.json" "$ETC/runtime.json" || fail "editing the installed runtime.json"
# The documented daemon.json entry, with the config path as a runtime flag; `ctr run
# --runc-binary` below gets it from containerd's environment (GDRPROXY_RUNTIME_CONFIG).
oci_dockerd "$ETC/runtime.json" "$RT"

oci_rootfs "$WORK/skel" "$(dirname "$A")" "$(dirname "$BENCH")"
tar -C "$WORK/skel/rootfs" -cf "$WORK/skel.tar" . && docker import "$WORK/skel.tar" gdrproxy-test:1 >/dev/null ||
  fail "docker import failed"
adir=$(dirname "$A") bdir=$(dirname "$BENCH")
run=(docker run --runtime gdrproxy --network none -v /usr/lib:/usr/lib:ro -v /usr/lib64:/usr/lib64:ro
  -v "$adir:$adir:ro" -v "$bdir:$bdir:ro")

# 1. A container's devices, trapped calls and Docker's own profile.
"${run[@]}" --rm --name one --device /dev/infiniband/uverbs1 gdrproxy-test:1 sh -c "echo ib: \$(ls /dev/infiniband);
  $BENCH client 3 /dev/infiniband/uverbs1 >/dev/null && echo bench: ok; $A open /dev/infiniband/uverbs0 rdwr syscall;
  unshare -U true && echo userns: allowed || echo userns: refused" >"$WORK/c1.out" 2>&1 ||
  { cat "$WORK/c1.out"; tail -5 "$WORK/dockerd.log"; fail "docker run exit $?"; }
expect "$WORK/c1.out" "^ib: uverbs1$"
expect "$WORK/c1.out" "^bench: ok$"
expect "$WORK/c1.out" "^open-syscall ERR ENOENT$"
expect "$WORK/c1.out" "^userns: refused$"
traced() { jq -s "[.[] | select(.device == \"uverbs1\" and .syscall == \"ioctl\")] | length" "$WORK/traces/$1.jsonl" 2>/dev/null || echo 0; }
id1=$(sed -n 's/.*container \([0-9a-f]\{64\}\) ended.*/\1/p' "$WORK/agent.log" | head -1)
[[ -n $id1 && $(traced "$id1") -ge 1 ]] || fail "the container's uverbs1 ioctls are not in its trace"

# 2. docker exec joins the container's session; restart, stop, kill and rm -f end sessions.
"${run[@]}" -d --name two --device /dev/infiniband/uverbs1 gdrproxy-test:1 sleep 300 >/dev/null || fail "docker run -d"
id2=$(docker inspect -f '{{.Id}}' two)
docker exec two sh -c "$BENCH client 5 /dev/infiniband/uverbs1 >/dev/null && echo bench: ok" >"$WORK/exec.out" 2>&1
expect "$WORK/exec.out" "^bench: ok$"
expect "$WORK/agent.log" "container $id2: process [0-9]+ \(running\) joins its session"
# Verbs Docker maps onto runc's: pause and resume (docker pause/unpause), ps --format json
# (docker top), update (docker update), and the runtime's features.
docker pause two >/dev/null && [[ $(docker inspect -f '{{.State.Status}}' two) == paused ]] || fail "docker pause"
docker unpause two >/dev/null && [[ $(docker inspect -f '{{.State.Status}}' two) == running ]] || fail "docker unpause"
docker top two >"$WORK/top.out" 2>&1 && grep -q "sleep 300" "$WORK/top.out" || { cat "$WORK/top.out"; fail "docker top"; }
# update: this rig's cgroup2 has no cpu, memory or pids controller for docker update to set, so
# the shim is called as containerd's shim calls it, on Docker's own runc root.
rt=("$RT" "--gdrproxy-config=$ETC/runtime.json" --root "$WORK/exec/runtime-runc/moby"
  --log "$WORK/rt.log" --log-format json)
"${rt[@]}" state "$id2" | jq -e '.status == "running"' >/dev/null || fail "runc state through the shim"
"${rt[@]}" ps --format json "$id2" | jq -e 'length >= 1' >/dev/null || fail "runc ps --format json through the shim"
echo '{}' | "${rt[@]}" update -r - "$id2" || fail "runc update through the shim"
"$RT" --gdrproxy-config="$ETC/runtime.json" features 2>/dev/null | jq -e .ociVersionMin >/dev/null ||
  fail "runc features through the shim"
sessions() { grep -c "container $id2 ended" "$WORK/agent.log"; }
docker restart -t 1 two >/dev/null || fail "docker restart"
for i in $(seq 50); do [[ $(sessions) -ge 1 ]] && break; sleep 0.1; done
[[ $(sessions) == 1 ]] || fail "restart did not end the first session"
# The first session served the exec's calls (the container's own `sleep` makes none).
served=$(sed -n "s/.*container $id2 ended: \([0-9]*\) ioctl.*/\1/p" "$WORK/agent.log" | head -1)
[[ ${served:-0} -ge 5 ]] || fail "the container's session served ${served:-no} ioctls, not the exec's"
docker exec two sh -c "$BENCH client 2 /dev/infiniband/uverbs1 >/dev/null && echo bench: ok" >"$WORK/exec2.out" 2>&1
expect "$WORK/exec2.out" "^bench: ok$"
docker stop -t 1 two >/dev/null || fail "docker stop"
docker start two >/dev/null || fail "docker start"
docker kill two >/dev/null || fail "docker kill"
docker start two >/dev/null || fail "docker start after kill"
docker rm -f two >/dev/null || fail "docker rm -f"
for i in $(seq 50); do [[ $(sessions) -ge 4 ]] && break; sleep 0.1; done
[[ $(sessions) == 4 ]] || fail "restart, stop, kill and rm -f ended $(sessions) sessions, not 4"

# 3. Rails, whichever way Docker ends the container.
"${run[@]}" -d --name rails --device /dev/infiniband/uverbs0 gdrproxy-test:1 sleep 300 >/dev/null || fail "docker run -d rails"
rails_in rails "docker run"
docker stop -t 1 rails >/dev/null || fail "docker stop rails"
rails_back "docker stop"
docker start rails >/dev/null || fail "docker start rails"
rails_in rails "docker start"
docker kill rails >/dev/null && docker wait rails >/dev/null || fail "docker kill rails"
rails_back "docker kill"
docker start rails >/dev/null || fail "docker start rails after kill"
docker restart -t 1 rails >/dev/null || fail "docker restart rails"
rails_in rails "docker restart"
[[ $(ls "$STATE" | wc -l) == 1 ]] || fail "after docker restart, the rail state directory holds: $(ls "$STATE")"
docker rm -f rails >/dev/null || fail "docker rm -f rails"
rails_back "docker rm -f"

# 4. Two containers at once with different grants: each runs calls on its own node, is refused
# the other's (made by its number with Docker's CAP_MKNOD: the device cgroup says no), and has
# its own trace.
for n in 0 1; do
  o=$((1 - n))
  "${run[@]}" -d --name "g$n" --device "/dev/infiniband/uverbs$n" gdrproxy-test:1 sh -c "
    $BENCH client 3 /dev/infiniband/uverbs$n >/dev/null && echo bench: ok
    mknod /dev/other c 231 $((192 + o)) && head -c1 /dev/other; echo other-rc=\$?; sleep 2" >/dev/null ||
    fail "docker run g$n"
done
for n in 0 1; do
  docker wait "g$n" >/dev/null
  docker logs "g$n" >"$WORK/g$n.out" 2>&1
  expect "$WORK/g$n.out" "^bench: ok$"
  expect "$WORK/g$n.out" "other.*Operation not permitted"
  expect "$WORK/g$n.out" "^other-rc=1$"
  gid=$(docker inspect -f '{{.Id}}' "g$n")
  docker rm "g$n" >/dev/null
  for i in $(seq 50); do grep -q "container $gid ended" "$WORK/agent.log" && break; sleep 0.1; done
  own=$(jq -s "[.[] | select(.syscall == \"ioctl\" and .device == \"uverbs$n\")] | length" "$WORK/traces/$gid.jsonl")
  other=$(jq -s "[.[] | select(.device == \"uverbs$((1 - n))\")] | length" "$WORK/traces/$gid.jsonl")
  [[ $own -ge 3 && $other == 0 ]] || fail "g$n's trace: $own calls on uverbs$n, $other on the other node"
done
rails_back "g0 (granted uverbs0, so given the rails) ended"

# 5. A device the runtime config does not grant: refused by the shim, its reason shown by docker.
docker run --rm --runtime gdrproxy --network none --device /dev/infiniband/rdma_cm gdrproxy-test:1 true \
  >"$WORK/c3.out" 2>&1 && fail "a container asking for rdma_cm started"
expect "$WORK/c3.out" "asks for device rdma_cm, which $ETC/runtime.json does not grant"
grep "ended:" "$WORK/agent.log" | grep -v " 0 denied" && fail "the agent denied calls"
# 6. containerd directly, as Kubernetes' CRI plugin drives it: the shim v2 with BinaryName. The
# container, granted uverbs0, gets the rails in a network namespace ctr makes and names nowhere.
ctr=(timeout 60 ctr --address "$WORK/exec/containerd/containerd.sock" --namespace gdrproxy-test)
# This rig's cgroup2 hierarchy has no cpu controller: no CPU shares (ctr's default is 1024).
"${ctr[@]}" run --rm --rootfs --cpu-shares 0 --runc-binary "$RT" --device /dev/infiniband/uverbs0 \
  --mount "type=bind,src=$bdir,dst=$bdir,options=rbind:ro" --mount "type=bind,src=/usr/lib,dst=/usr/lib,options=rbind:ro" \
  --mount "type=bind,src=/usr/lib64,dst=/usr/lib64,options=rbind:ro" \
  --env PATH=/bin "$WORK/skel/rootfs" ctr-one sh -c "echo ib: \$(ls /dev/infiniband); $BENCH client 3 /dev/infiniband/uverbs0 >/dev/null && echo bench: ok; ip -o -4 addr show" \
  >"$WORK/c4.out" 2>&1 || { cat "$WORK/c4.out"; fail "ctr run exit $?"; }
expect "$WORK/c4.out" "^ib: uverbs0$"
expect "$WORK/c4.out" "^bench: ok$"
expect "$WORK/c4.out" "rail0 +inet 198\.51\.100\.10/24"
expect "$WORK/agent.log" "container ctr-one ended: [1-9][0-9]* ioctl"
rails_back "ctr run --rm"
echo "PASS: docker and containerd with the runtime shim, installed: devices, Docker's profile, exec, restart/stop/kill/rm -f, rails given back each time, two containers apart, refusal shown, ctr run with rails"
