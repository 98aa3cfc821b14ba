#!/usr/bin/env bash
# `gdrproxy agent` behind the real OCI runtimes: Debian's runc and crun start one container each,
# at the same time, from hand-written bundles whose config.json carries the profile of
# `gdrproxy oci seccomp` merged into a deny-by-default base that allows ioctl and openat
# unconditionally (the case libseccomp would let swallow the notify rules). The idea not to
# miss: both containers' init processes are PID 1 in their own pid namespaces, yet the agent
# keeps them apart (state, grants, traces), because it keys everything by container and host pid,
# never by the pid a container sees; and each container's device ioctls reach its trace, so the
# runtimes built the notify rules as the profile meant.
# Stand-in device nodes (gdrproxy-testkit standin) give the containers a uverbs0 and a uverbs1.
# Usage: oci_runtime_test.sh GDRPROXY ATTACK_CLIENT   (needs root, runc and crun; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
TK=$(dirname "$GP")/gdrproxy-testkit  # the tests' tool: stand-in devices, exercisers
A=$(realpath "$2")
BENCH=$(realpath "$(dirname "$A")/../bench/ioctl_bench")
[[ $EUID == 0 ]] || { echo "SKIP: needs root"; exit 77; }
for rt in runc crun; do
  command -v $rt >/dev/null || { echo "SKIP: $rt is not installed (scripts/setup.sh installs it)"; exit 77; }
done
if [[ -z ${GDRPROXY_OCI_TEST_INNER:-} ]]; then
  GDRPROXY_OCI_TEST_INNER=1 exec timeout -k 5 180 "$TK" standin "$0" "$@"
fi
# This host mounts cgroup v1 controllers with cgroup2 beside them ("hybrid"), which crun refuses:
# inside this test's private mount namespace /sys/fs/cgroup becomes the plain v2 hierarchy (its
# device guard is a BPF program, which needs no controller).
if [[ $(stat -f -c %T /sys/fs/cgroup) != cgroup2fs ]]; then
  mount -t cgroup2 none /sys/fs/cgroup || { echo "SKIP: cannot mount cgroup2 here"; exit 77; }
fi
WORK=$(mktemp -d /tmp/gdrproxy-oci.XXXXXX)
chmod 755 "$WORK"
AGENT_PID=
cleanup() {
  for c in oci-a oci-b oci-c; do
    runc --root "$WORK/runc" delete -f $c >/dev/null 2>&1
    crun --root "$WORK/crun" delete -f $c >/dev/null 2>&1
  done
  [[ -n $AGENT_PID ]] && kill -KILL "$AGENT_PID" 2>/dev/null
  umount -R "$WORK"/bundle-*/rootfs 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; sed 's/^/  [agent] /' "$WORK/agent.log" >&2; exit 1; }
expect_line() {
  local line
  line=$(grep -m1 -F -- "$2" "$1") || { echo "--- $1:"; cat "$1"; fail "no '$2' line in $1"; }
  [[ $line =~ $3 ]] || { echo "--- $1:"; cat "$1"; fail "'$line' does not match /$3/"; }
}

SOCK=$WORK/run/agent.sock
mkdir -p "$WORK/traces"
cat >"$WORK/agent.json" <<'EOF'
{"version": 1,
 "containers": [
   {"match": {"id": "oci-a", "metadata": "tenant=a"}, "grants": ["uverbs0"], "trace": true},
   {"match": {"id": "oci-b", "metadata": "tenant=b"}, "grants": ["uverbs1"], "trace": true}]}
EOF
"$GP" agent --socket "$SOCK" --ctl-socket "$WORK/run/agent.ctl" --config "$WORK/agent.json" \
  --trace-dir "$WORK/traces" >"$WORK/agent.log" 2>&1 &
AGENT_PID=$!
for i in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.05; done
[[ -S $SOCK ]] || fail "the agent did not start"

# A deny-by-default base in Docker's format: every x86-64 syscall this machine's headers name,
# less a few no container needs, allowed unconditionally in one entry (ioctl and openat among
# them).
python3 - "$WORK/base.json" <<'PY'
import json, re, sys
names = sorted(set(re.findall(r"#define __NR_(\w+) ", open("/usr/include/x86_64-linux-gnu/asm/unistd_64.h").read())))
denied = {"reboot", "kexec_load", "kexec_file_load", "swapon", "swapoff", "init_module", "finit_module"}
json.dump({"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
           "archMap": [{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86"]}],
           "syscalls": [{"names": [n for n in names if n not in denied], "action": "SCMP_ACT_ALLOW"}]},
          open(sys.argv[1], "w"))
PY

# bundle NAME METADATA RUNTIME: a bundle whose rootfs is the host's /usr and /etc (read-only binds) plus
# the build tree, with both stand-in uverbs nodes, and the container's seccomp listener given to
# the agent.
bundle() {
  local b=$WORK/bundle-$1
  mkdir -p "$b/rootfs"
  (cd "$b/rootfs" && mkdir -p usr etc proc dev tmp "${A%/*}" && ln -s usr/bin bin && ln -s usr/lib lib &&
    ln -s usr/lib64 lib64 && ln -s usr/sbin sbin)
  "$GP" oci seccomp --base "$WORK/base.json" --listener "$SOCK" --metadata "$2" --runtime "$3" \
    >"$b/seccomp.json" || fail "gdrproxy oci seccomp failed"
  python3 - "$b/config.json" "$1" "$2" "$SOCK" "$A" "$b/seccomp.json" "$BENCH" <<'PY'
import json, os, sys
path, name, metadata, sock, attack, seccomp, bench = sys.argv[1:]
dev = lambda p: os.stat(p).st_rdev
nodes = [("/dev/infiniband/uverbs0", dev("/dev/infiniband/uverbs0")),
         ("/dev/infiniband/uverbs1", dev("/dev/infiniband/uverbs1"))]
probe = "; ".join(f"{attack} open {p} rdwr syscall | sed s/^/{p[-7:]}-/; {bench} client 3 {p} >/dev/null 2>&1"
                  for p, _ in nodes)
bind = lambda src: {"destination": src, "type": "bind", "source": src, "options": ["rbind", "ro"]}
config = {
  "ociVersion": "1.0.2",
  "process": {"terminal": False, "user": {"uid": 0, "gid": 0}, "cwd": "/",
              "args": ["sh", "-c", probe + "; echo pid=$$"],
              "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"], "noNewPrivileges": True},
  "root": {"path": "rootfs", "readonly": True},
  "hostname": name,
  "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
             {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
              "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
             {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid"]},
             bind("/usr"), bind("/etc"), bind(os.path.dirname(attack)), bind(os.path.dirname(bench))],
  "linux": {
    "namespaces": [{"type": t} for t in ("pid", "mount", "ipc", "uts", "network")],
    "devices": [{"path": p, "type": "c", "major": os.major(d), "minor": os.minor(d),
                 "fileMode": 0o666, "uid": 0, "gid": 0} for p, d in nodes],
    "resources": {"devices": [{"allow": False, "access": "rwm"}] + [
        {"allow": True, "type": "c", "major": os.major(d), "minor": os.minor(d), "access": "rw"}
        for _, d in nodes]},
    "seccomp": json.load(open(seccomp)),
  },
}
json.dump(config, open(path, "w"), indent=1)
PY
}
bundle oci-a tenant=a runc
bundle oci-b tenant=b crun

# Both at once. crun runs without a cgroup manager: it raises RLIMIT_MEMLOCK before loading its
# device BPF program, which needs CAP_SYS_RESOURCE, and the machines this runs on may not give it
# (runc's device program loads without it). The device cgroup is the OCI integration's to test.
runc --root "$WORK/runc" run --bundle "$WORK/bundle-oci-a" oci-a >"$WORK/a.out" 2>&1 &
a=$!
crun --root "$WORK/crun" --cgroup-manager=disabled run --bundle "$WORK/bundle-oci-b" oci-b >"$WORK/b.out" 2>&1
b_rc=$?
wait $a
a_rc=$?
[[ $a_rc == 0 ]] || { cat "$WORK/a.out"; fail "runc container exit $a_rc"; }
[[ $b_rc == 0 ]] || { cat "$WORK/b.out"; fail "crun container exit $b_rc"; }
expect_line "$WORK/a.out" "uverbs0-open" " OK ioctl="
expect_line "$WORK/a.out" "uverbs1-open" " ERR EACCES$"
expect_line "$WORK/b.out" "uverbs1-open" " OK ioctl="
expect_line "$WORK/b.out" "uverbs0-open" " ERR EACCES$"
expect_line "$WORK/a.out" "pid=" "^pid=1$"
expect_line "$WORK/b.out" "pid=" "^pid=1$"
for i in $(seq 50); do
  [[ $(grep -c " ended:" "$WORK/agent.log") == 2 ]] && break
  sleep 0.1
done
[[ $(grep -c " ended:" "$WORK/agent.log") == 2 ]] || fail "both sessions should have ended"
grep -q 'container oci-a: process .*grants \[uverbs0\]' "$WORK/agent.log" || fail "runc's container did not get its rule"
grep -q 'container oci-b: process .*grants \[uverbs1\]' "$WORK/agent.log" || fail "crun's container did not get its rule"
ta=$WORK/traces/oci-a.jsonl tb=$WORK/traces/oci-b.jsonl
# has TRACE DEVICE DECISION: a record of that device with that decision.
has() { jq -e -s --arg d "$2" --arg x "$3" 'any(.[]; .device == $d and .decision == $x)' "$1" >/dev/null; }
has "$ta" uverbs1 deny || { cat "$ta"; fail "oci-a's trace lacks its denial"; }
has "$tb" uverbs0 deny || { cat "$tb"; fail "oci-b's trace lacks its denial"; }
has "$ta" uverbs0 allow || { cat "$ta"; fail "oci-a's trace lacks its granted open"; }
has "$tb" uverbs1 allow || { cat "$tb"; fail "oci-b's trace lacks its granted open"; }
# The probe's ioctl on its granted node was trapped (the base's ALLOW of ioctl did not hide it).
jq -e -s 'any(.[]; .device == "uverbs0" and .syscall == "ioctl")' "$ta" >/dev/null ||
  { cat "$ta"; fail "oci-a's uverbs ioctl was not trapped: the runtime's filter lacks the notify rule"; }
jq -e -s 'any(.[]; .device == "uverbs1" and .syscall == "ioctl")' "$tb" >/dev/null ||
  { cat "$tb"; fail "oci-b's uverbs ioctl was not trapped: the runtime's filter lacks the notify rule"; }
! has "$ta" uverbs0 deny || fail "oci-a's trace holds oci-b's call"
! has "$tb" uverbs1 deny || fail "oci-b's trace holds oci-a's call"

# A profile that lets a request run untrapped which the container's rule does not allow unread
# (here a uverbs request, which no policy lets skip the agent): the agent cannot stop such calls
# with its listener, so it kills the container as soon as it reads the profile, and says why.
bundle oci-c tenant=c runc
python3 - "$WORK/bundle-oci-c/config.json" <<'PY'
import json, sys
path = sys.argv[1]
c = json.load(open(path))
c["process"]["args"] = ["sh", "-c", "sleep 3; echo survived"]
c["linux"]["seccomp"]["syscalls"].insert(0, {"names": ["ioctl"], "action": "SCMP_ACT_ALLOW",
    "args": [{"index": 1, "value": 0xffffffff, "valueTwo": 0xc0181b01, "op": "SCMP_CMP_MASKED_EQ"}]})
json.dump(c, open(path, "w"))
PY
timeout 20 runc --root "$WORK/runc" run --bundle "$WORK/bundle-oci-c" oci-c >"$WORK/c.out" 2>&1
c_rc=$?
# Killed while runc still starts it (runc fails) or just after (137): never 0.
[[ $c_rc != 0 ]] || { cat "$WORK/c.out"; fail "the container whose profile lets a uverbs ioctl through exited 0"; }
! grep -q survived "$WORK/c.out" || fail "the container whose profile lets a uverbs ioctl through ran on"
expect_line "$WORK/agent.log" "container oci-c: process" \
  "refused: its profile lets ioctl 0xc0181b01 run untrapped, which its rule's policy, mode and trace do not allow unread \(killed\)$"

echo "PASS: runc and crun containers (both PID 1) kept apart: $(tr '\n' ' ' <"$WORK/a.out" | cut -c1-60)...;" \
  "a profile letting a uverbs ioctl run untrapped: container killed"
