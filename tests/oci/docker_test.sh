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

mkdir -p "$WORK/traces"
# The operator's edits: the agent's rule (its config is the installed file), the runtime config's
# grants and this rig's sockets (the shipped default keeps its runtime, runc).
OCI_AGENT_CONFIG=$ETC/agent.json oci_start_agent "$(jq '.containers = [{match: {id: "*"},
  grants: ["uverbs0", "uverbs1", "rdma_cm"], grants_from_metadata: true, trace: true}]' "$ETC/agent.json")" \
  --trace-dir "$WORK/traces"
[[ $(readlink "/proc/$AGENT_PID/exe") == "$GP" ]] || fail "the agent is not the installed binary"
jq --arg s "$SOCK" '.listener = $s | .grants = ["uverbs0", "uverbs1"] | .sysfs = false' "$ETC/runtime.json" \
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

# 3. Two containers at once with different grants: each runs calls on its own node, is refused
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

# 4. A device the runtime config does not grant: refused by the shim, its reason shown by docker.
docker run --rm --runtime gdrproxy --network none --device /dev/infiniband/rdma_cm gdrproxy-test:1 true \
  >"$WORK/c3.out" 2>&1 && fail "a container asking for rdma_cm started"
expect "$WORK/c3.out" "asks for device rdma_cm, which $ETC/runtime.json does not grant"
grep "ended:" "$WORK/agent.log" | grep -v " 0 denied" && fail "the agent denied calls"
# 5. containerd directly, as Kubernetes' CRI plugin drives it: the shim v2 with BinaryName.
ctr=(timeout 60 ctr --address "$WORK/exec/containerd/containerd.sock" --namespace gdrproxy-test)
# This rig's cgroup2 hierarchy has no cpu controller: no CPU shares (ctr's default is 1024).
"${ctr[@]}" run --rm --rootfs --cpu-shares 0 --runc-binary "$RT" --device /dev/infiniband/uverbs1 \
  --mount "type=bind,src=$bdir,dst=$bdir,options=rbind:ro" --mount "type=bind,src=/usr/lib,dst=/usr/lib,options=rbind:ro" \
  --mount "type=bind,src=/usr/lib64,dst=/usr/lib64,options=rbind:ro" \
  --env PATH=/bin "$WORK/skel/rootfs" ctr-one sh -c "echo ib: \$(ls /dev/infiniband); $BENCH client 3 /dev/infiniband/uverbs1 >/dev/null && echo bench: ok" \
  >"$WORK/c4.out" 2>&1 || { cat "$WORK/c4.out"; fail "ctr run exit $?"; }
expect "$WORK/c4.out" "^ib: uverbs1$"
expect "$WORK/c4.out" "^bench: ok$"
expect "$WORK/agent.log" "container ctr-one ended: [1-9][0-9]* ioctl"
echo "PASS: docker and containerd with the runtime shim: devices, Docker's profile, exec, restart/stop/kill/rm -f, two containers apart, refusal shown, ctr run"
