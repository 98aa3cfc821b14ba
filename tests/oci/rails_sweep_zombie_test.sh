#!/usr/bin/env bash
# The rail sweep (`gdrproxy hook sweep`, and the agent at start) gives back the rails of a
# container whose init has died but is not yet reaped. The idea not to miss: a zombie still has
# its pid and start time, so a sweep that only compares those takes it for a running container
# and leaves its rails in a namespace nobody uses, until the next sweep; a zombie never runs
# again and has left its namespaces. (Found by tests/bench/agent_soak.sh: the init of a killed
# container stays a zombie until its reaper gets to it, here pid 1, about a second.)
# Here the hook is run by hand with the state a runtime would send, for a process whose parent
# never reaps it, in a network namespace of its own; the "host" is a network namespace this test
# made. Usage: rails_sweep_zombie_test.sh GDRPROXY   (root; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
[[ $EUID == 0 ]] || { echo "SKIP: needs root"; exit 77; }
if [[ -z ${GDRPROXY_RAILS_TEST_INNER:-} ]]; then
  GDRPROXY_RAILS_TEST_INNER=1 exec timeout -k 5 60 unshare --net --mount "$0" "$@"
fi
WORK=$(mktemp -d /tmp/gdrproxy-zombie.XXXXXX)
PARENT=
trap 'exec 2>/dev/null; [[ -n $PARENT ]] && kill -KILL $PARENT; umount "$WORK"/rails/*/*.netns 2>/dev/null; rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

ip link set lo up
ip link add rail0 type veth peer name rail0p && ip addr add 198.51.100.10/24 dev rail0 &&
  ip link set rail0 up && ip link set rail0p up || fail "cannot make the rail"
# The container's init: a process in a network namespace of its own, whose parent never waits
# for it (the parent execs a sleep), so that once killed it stays a zombie.
sh -c 'unshare --net sleep 600 & echo $! >"$1"; exec sleep 600' sh "$WORK/init.pid" &
PARENT=$!
for _ in $(seq 50); do [[ -s $WORK/init.pid ]] && break; sleep 0.05; done
INIT=$(cat "$WORK/init.pid")
for _ in $(seq 50); do [[ $(readlink /proc/"$INIT"/ns/net) != "$(readlink /proc/self/ns/net)" ]] && break; sleep 0.05; done
echo "{\"ociVersion\": \"1.0.2\", \"id\": \"zombie-$$\", \"status\": \"creating\", \"pid\": $INIT, \"bundle\": \"$WORK\"}" |
  "$GP" hook create-runtime --rails rail0 --allow-plain-rails --state-dir "$WORK/rails" >"$WORK/hook.out" 2>&1 ||
  { cat "$WORK/hook.out"; fail "create-runtime failed"; }
ip link show rail0 >/dev/null 2>&1 && fail "rail0 is still on the host after create-runtime"
kill -KILL "$INIT"
for _ in $(seq 50); do [[ $(awk '{print $3}' /proc/"$INIT"/stat 2>/dev/null) == Z ]] && break; sleep 0.05; done
[[ $(awk '{print $3}' /proc/"$INIT"/stat 2>/dev/null) == Z ]] || fail "the init is not a zombie (the test assumes it stays one)"
"$GP" hook sweep --state-dir "$WORK/rails" >"$WORK/sweep.out" 2>&1
grep -q "container zombie-$$ is gone (process $INIT): its rails were given back" "$WORK/sweep.out" ||
  { cat "$WORK/sweep.out"; fail "the sweep did not give back the rails of a container whose init is a zombie"; }
ip link show rail0 >/dev/null 2>&1 || fail "rail0 is not back on the host"
[[ -z $(ls -A "$WORK/rails" 2>/dev/null) ]] || fail "the journal directory was left behind: $(ls -A "$WORK/rails")"

# A second container's poststop hook and a sweep (an agent starting) take its directory at the
# same moment: both are held at the door while the test holds the directory, then let go
# together. One gives the rails back; the other must find them given back, not fail on the
# journal the first renamed (found by the soak: an agent whose start-up sweep threw never served).
unshare --net sleep 600 &
INIT2=$!
for _ in $(seq 50); do [[ $(readlink /proc/"$INIT2"/ns/net) != "$(readlink /proc/self/ns/net)" ]] && break; sleep 0.05; done
echo "{\"ociVersion\": \"1.0.2\", \"id\": \"race-$$\", \"status\": \"creating\", \"pid\": $INIT2, \"bundle\": \"$WORK\"}" |
  "$GP" hook create-runtime --rails rail0 --allow-plain-rails --state-dir "$WORK/rails" >"$WORK/hook2.out" 2>&1 ||
  { cat "$WORK/hook2.out"; fail "the second create-runtime failed"; }
kill -KILL "$INIT2"
wait "$INIT2" 2>/dev/null
dir=$WORK/rails/race-$$
[[ -d $dir ]] || fail "no journal directory $dir"
flock "$dir" sleep 1 &
holder=$!
sleep 0.2
"$GP" hook sweep --state-dir "$WORK/rails" >"$WORK/sweep2.out" 2>&1 &
sweep=$!
"$GP" hook poststop --id "race-$$" --state-dir "$WORK/rails" >"$WORK/poststop.out" 2>&1 &
poststop=$!
wait $holder
wait $sweep
sweep_rc=$?
wait $poststop
poststop_rc=$?
((sweep_rc == 0)) || { cat "$WORK/sweep2.out"; fail "the sweep beside a poststop exited $sweep_rc"; }
((poststop_rc == 0)) || { cat "$WORK/poststop.out"; fail "the poststop beside a sweep exited $poststop_rc"; }
ip link show rail0 >/dev/null 2>&1 || fail "rail0 is not back on the host after the second container"
[[ -z $(ls -A "$WORK/rails" 2>/dev/null) ]] || fail "the journal directory was left behind: $(ls -A "$WORK/rails")"
# A directory the sweep cannot give back (its journal unreadable) costs that container only: an
# agent still starts, and says so.
mkdir -p "$WORK/rails/broken-$$"
echo "4194000 1" >"$WORK/rails/broken-$$/owner"
echo "{not json" >"$WORK/rails/broken-$$/netns-x.journal"
"$GP" agent --socket "$WORK/a.sock" --ctl-socket "$WORK/a.ctl" --rail-state-dir "$WORK/rails" \
  >"$WORK/agent.log" 2>&1 &
agent=$!
for _ in $(seq 100); do grep -q "serving " "$WORK/agent.log" && break; sleep 0.05; done
kill $agent 2>/dev/null
wait $agent 2>/dev/null
grep -q "serving " "$WORK/agent.log" || { cat "$WORK/agent.log"; fail "an unreadable journal of a gone container stopped the agent from starting"; }
grep -q "container broken-$$ is gone (process 4194000): its rails could not all be given back" "$WORK/agent.log" ||
  { cat "$WORK/agent.log"; fail "the agent did not say which container's rails it could not give back"; }
echo "PASS: the sweep gave back the rails of a container whose init is an unreaped zombie, beside" \
  "its poststop; an unreadable journal did not stop the agent from starting"
