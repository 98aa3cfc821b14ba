#!/usr/bin/env bash
# One exit-status scheme for every subcommand (README, "Exit status"): --help 0; a usage error
# 125 for a subcommand that runs a command (so the command's own 1, 2, ... stay unambiguous) and
# 2 for the others; a setup error of `run` 125; otherwise the command's status or 128+signal.
# Usage: exit_status_test.sh GDRPROXY
set -uo pipefail
GP=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {  # expect STATUS CMD...
  local want=$1; shift
  "$@" >/dev/null 2>&1
  local rc=$?
  [[ $rc == "$want" ]] || fail "'$*' exited $rc, expected $want"
}
expect 0 "$GP" --help
expect 0 "$GP" run --help
expect 0 "$GP" sysfs build --help
expect 125 "$GP" run --bogus -- true
expect 125 "$GP" run --mode sometimes -- true
expect 125 "$GP" run --grant
expect 125 "$GP" run --policy /nonexistent/policy.json -- true
expect 125 "$GP" run --grant no-such-device -- true
expect 2 "$GP" sysfs build
expect 2 "$GP" netns move --ifaces x
expect 2 "$GP" no-such-subcommand
expect 2 "$GP"
# Nothing for tests in the shipped binary: the tests' helpers are gdrproxy-testkit's alone.
expect 2 "$GP" standin true
expect 2 "$GP" exercise uverbs /dev/null
echo "PASS: exit statuses follow one scheme"
