#!/usr/bin/env bash
# `gdrproxy oci prepare --lsm-hook` with Debian's runc: the createRuntime hook `gdrproxy hook
# judge` asks the agent to judge the new container in the kernel from its creation (before the
# runtime hands its listener over). The idea not to miss: the hook is the first createRuntime hook
# and the agent's --lsm choice decides, not the hook: an agent without a judge lets the container
# run and says so in one line; no agent at the named control socket fails the hook, and runc then
# never starts the container. (The judging itself needs the BPF LSM: tests/vm/agent_lsm.sh.)
# Usage: judge_hook_test.sh GDRPROXY   (root, runc; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
# shellcheck source=tests/oci/lib.sh
. "$(dirname "$0")/lib.sh"
oci_enter "$GP" - "$0" "$@"
WORK=$(mktemp -d /tmp/gdrproxy-judge-hook.XXXXXX)
chmod 755 "$WORK"
AGENT_PID=
cleanup() {
  local c
  for c in judge-1 judge-2; do runc --root "$WORK/runc" delete -f "$c" >/dev/null 2>&1; done
  [[ -n $AGENT_PID ]] && kill -KILL "$AGENT_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

oci_start_agent '{"version": 1, "containers": [{"match": {"id": "judge-*"}, "grants": ["uverbs0"]}]}'
bundle() {  # DIR CTL
  oci_rootfs "$1"
  jq -n '{ociVersion: "1.0.2",
    process: {terminal: false, user: {uid: 0, gid: 0}, cwd: "/", args: ["sh", "-c", "echo ran"],
              env: ["PATH=/bin"], noNewPrivileges: true},
    root: {path: "rootfs", readonly: true},
    mounts: [{destination: "/proc", type: "proc", source: "proc"}],
    linux: {namespaces: [{type: "pid"}, {type: "mount"}],
            resources: {devices: [{allow: false, access: "rwm"}]},
            cgroupsPath: "/gdrproxy-judge-hook"},
    hooks: {createRuntime: [{path: "/bin/true", args: ["true"]}]}}' >"$1/config.json"
  "$GP" oci prepare "$1" --grant uverbs0 --listener "$SOCK" --no-sysfs --lsm-hook --agent-ctl "$2" \
    >"$1.prepare" 2>&1 || { cat "$1.prepare"; fail "oci prepare --lsm-hook failed"; }
}
bundle "$WORK/b1" "$WORK/run/agent.ctl"
expect "$WORK/b1.prepare" "judged from its creation \(hook judge, $WORK/run/agent.ctl\)"
jq -e --arg gp "$GP" --arg ctl "$WORK/run/agent.ctl" '.hooks.createRuntime | length == 2 and
  .[0].path == $gp and .[0].args == ["gdrproxy", "hook", "judge", "--ctl-socket", $ctl] and
  .[1].path == "/bin/true"' "$WORK/b1/config.json" >/dev/null ||
  { jq .hooks "$WORK/b1/config.json"; fail "the judge hook is not the first createRuntime hook"; }

# An agent without --lsm: the container runs; the agent says it is not judged.
runc --root "$WORK/runc" run --bundle "$WORK/b1" judge-1 >"$WORK/c1.out" 2>&1 || { cat "$WORK/c1.out"; fail "runc run failed"; }
expect "$WORK/c1.out" "^ran$"
expect "$WORK/agent.log" "container judge-1 \(pid [0-9]+\): its runtime asks for a judge from its creation, but the agent runs without --lsm"

# No agent at the hook's control socket: the hook fails, so the container is never started.
bundle "$WORK/b2" "$WORK/run/none.ctl"
runc --root "$WORK/runc" run --bundle "$WORK/b2" judge-2 >"$WORK/c2.out" 2>&1 && fail "runc started a container whose judge hook failed"
grep -q "^ran$" "$WORK/c2.out" && fail "the container ran although its judge hook failed"
expect "$WORK/c2.out" "nothing answers at the agent's control socket $WORK/run/none.ctl"

# The hook alone: a state without a process is refused.
echo '{"ociVersion": "1.0.2", "id": "judge-3", "status": "creating", "bundle": "/"}' |
  "$GP" hook judge --ctl-socket "$WORK/run/agent.ctl" >"$WORK/h3.out" 2>&1 && fail "a state without a pid was accepted"
expect "$WORK/h3.out" "container judge-3: the state names no process"
echo "PASS: judge hook first; agent without --lsm says so; no agent fails the container's creation"
