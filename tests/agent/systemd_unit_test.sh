#!/usr/bin/env bash
# configs/systemd/gdrproxy-agent.service is a unit systemd accepts (systemd-analyze verify, with
# ExecStart pointed at this build), and its ExecStart starts an agent that serves and stops on
# SIGTERM with status 0 (in a private mount namespace with a temporary /run; the config file and
# the log directory are moved to temporary paths). systemd itself is not started here.
# Usage: systemd_unit_test.sh GDRPROXY SOURCE_DIR   (77 = skipped without systemd-analyze)
set -uo pipefail
GP=$(realpath "$1")
unit=$2/configs/systemd/gdrproxy-agent.service
command -v systemd-analyze >/dev/null || { echo "SKIP: no systemd-analyze"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed "s|/usr/local/bin/gdrproxy|$GP|" "$unit" >"$work/gdrproxy-agent.service"
out=$(systemd-analyze verify "$work/gdrproxy-agent.service" 2>&1)
[[ $? == 0 && -z $out ]] || { echo "FAIL: systemd-analyze verify: $out"; exit 1; }
echo '{"version": 1}' >"$work/agent.json"
mkdir "$work/log"
exec_start=$(sed -n 's/^ExecStart=//p' "$work/gdrproxy-agent.service" |
  sed "s|/etc/gdrproxy/agent.json|$work/agent.json|; s|/var/log/gdrproxy|$work/log|")
# shellcheck disable=SC2016 # expanded by the inner shell
unshare --mount --propagation private bash -c '
  set -u
  mount -t tmpfs tmpfs /run && mkdir -m 700 /run/gdrproxy
  $2 >"$1/agent.log" 2>&1 &
  pid=$!
  for i in $(seq 100); do [[ -S /run/gdrproxy/agent.sock ]] && break; sleep 0.05; done
  [[ -S /run/gdrproxy/agent.sock && -S /run/gdrproxy/fds.sock ]] || { cat "$1/agent.log"; exit 1; }
  kill -TERM $pid
  wait $pid
  rc=$?
  pkill -KILL -f -- "^$2"  # the fd store holder, a copy of the agent process
  exit $rc' unit "$work" "$exec_start"
rc=$?
[[ $rc == 0 ]] || { echo "FAIL: the unit's ExecStart did not serve and stop cleanly (exit $rc)"; cat "$work/agent.log"; exit 1; }
echo "PASS: the unit verifies; its ExecStart served and stopped on SIGTERM"
