#!/usr/bin/env bash
# One row of ioctl_latency.sh: the command runs as a container process of `gdrproxy agent`
# (runtime_client plays runc: the notify filter a container's profile carries, its listener
# handed to the agent's socket), so its trapped calls take the agent's path (an enforce-mode
# session of a container, granted the node the bench calls) instead of `gdrproxy run`'s. The
# agent starts for the row and stops after it; only the command's own output is printed.
# Usage: tests/bench/agent_call.sh GDRPROXY RUNTIME_CLIENT [AGENT_OPTION...] -- CMD...
set -euo pipefail
gp=$1 rc=$2
shift 2
opts=()
while (($#)) && [[ $1 != -- ]]; do opts+=("$1"); shift; done
shift
work=$(mktemp -d /tmp/gdrproxy-agentcall.XXXXXX)
agent=
trap '[[ -n $agent ]] && kill "$agent" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
cat >"$work/agent.json" <<'EOF'
{"version": 1, "containers": [{"match": {"id": "bench-*"}, "grants": ["uverbs0"], "mode": "enforce"}]}
EOF
"$gp" agent -q --socket "$work/a.sock" --ctl-socket "$work/a.ctl" --config "$work/agent.json" \
  "${opts[@]}" 2>"$work/agent.log" &
agent=$!
for _ in $(seq 200); do [[ -S $work/a.sock ]] && break; sleep 0.02; done
[[ -S $work/a.sock ]] || { echo "agent_call: the agent did not start: $(cat "$work/agent.log")" >&2; exit 1; }
TMPDIR=$work "$rc" "$work/a.sock" "bench-$$" runc-init -- "$@"
