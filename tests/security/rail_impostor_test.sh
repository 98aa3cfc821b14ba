#!/usr/bin/env bash
# A tenant with CAP_NET_ADMIN in a pinned network namespace (a pod's, `--network ns:`) puts its own
# veth in its rail's place, with the rail's name and MAC (and, in the second case, its ifindex),
# then the poststop hook gives the rails back. The idea not to miss: the impostor must stay with
# the tenant, unconfigured, and the host's route to the rail subnet must lead into the real rail,
# whose other end is outside the tenant; the refusal is one line and the hook's exit status is
# not 0. The "host" is a network namespace this test makes, the rail a veth whose peer is in a
# "fabric" namespace standing in for a NIC's wire (as the other netns tests do).
#   1. The tenant renames the rail and makes the impostor: the real rail is found by its identity
#      in the tenant's namespace, brought back, and the impostor refused.
#   2. The tenant also hides the real rail in another namespace of its own (made by the test here,
#      standing in for one the tenant holds) and gives the impostor the rail's ifindex: the
#      impostor is refused and the hook says the rail is not found.
# Usage: rail_impostor_test.sh GDRPROXY   (root; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root" >&2; exit 77; }
command -v jq >/dev/null || { echo "SKIP: needs jq" >&2; exit 77; }
N=gri$$
H=${N}h F=${N}f T=${N}t X=${N}x
WORK=$(mktemp -d /tmp/gdrproxy-impostor.XXXXXX)
TENANT_PID=
cleanup() {
  [[ -n $TENANT_PID ]] && kill -KILL "$TENANT_PID" 2>/dev/null
  for ns in $H $F $T $X; do ip netns del "$ns" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT
for ns in $H $F $T $X; do ip netns add "$ns" || { echo "SKIP: cannot make network namespaces" >&2; exit 77; }; done

# One case: a fresh host and tenant, the rail moved by create-runtime, then `tenant_acts` in the
# tenant's namespace, then poststop. Leaves poststop's output in $WORK/post.out, its status in RC.
setup() {
  ip -n "$H" link set lo up
  ip -n "$H" link add rail0 type veth peer name wire0 netns "$F" || fail "cannot make the rail"
  ip -n "$F" link set wire0 up
  ip -n "$H" addr add 192.0.2.10/24 dev rail0
  ip -n "$H" link set rail0 up
  ip -n "$H" route add 203.0.113.0/24 via 192.0.2.1 dev rail0
  RAIL_IFINDEX=$(ip -n "$H" -j link show rail0 | jq '.[0].ifindex')
  RAIL_MAC=$(ip -n "$H" -j link show rail0 | jq -r '.[0].address')
  # The container's process, in the pinned namespace its bundle names.
  ip netns exec "$T" sleep 600 &
  TENANT_PID=$!
  disown
  for _ in $(seq 50); do
    [[ $(stat -L -c %i "/proc/$TENANT_PID/ns/net") == $(stat -c %i "/run/netns/$T") ]] && break
    sleep 0.05
  done
  mkdir -p "$WORK/bundle"
  jq -n --arg p "/run/netns/$T" '{linux: {namespaces: [{type: "network", path: $p}]}}' >"$WORK/bundle/config.json"
  STATE=$(jq -cn --arg id "impostor-$$" --argjson pid "$TENANT_PID" --arg b "$WORK/bundle" \
    '{ociVersion: "1.0.2", id: $id, status: "created", pid: $pid, bundle: $b}')
  echo "$STATE" | ip netns exec "$H" "$GP" hook create-runtime --rails rail0 --allow-plain-rails \
    --state-dir "$WORK/state" >"$WORK/create.out" 2>&1 || { cat "$WORK/create.out"; fail "create-runtime failed"; }
  ip -n "$T" -4 addr show rail0 | grep -q "192\.0\.2\.10/24" || fail "the rail did not reach the tenant"
}
poststop() {
  echo "$STATE" | ip netns exec "$H" "$GP" hook poststop --state-dir "$WORK/state" >"$WORK/post.out" 2>&1
  RC=$?
  cat "$WORK/post.out"
}
# The impostor, if on the host, is the link whose other end is in the tenant's namespace.
check_impostor_stayed() {
  local imp=$1
  ip -n "$T" -j link show | jq -e --argjson i "$imp" '.[] | select(.ifindex == $i and .ifname == "rail0")' >/dev/null ||
    fail "the impostor (ifindex $imp in the tenant) left the tenant's namespace"
  [[ -z $(ip -n "$T" -4 addr show rail0) ]] || fail "the impostor was given addresses: $(ip -n "$T" -4 addr show rail0)"
  grep -q "rail0: refused veth ifindex $imp .* it is not the rail, which is veth ifindex $RAIL_IFINDEX" "$WORK/post.out" ||
    fail "no refusal line naming the impostor"
  [[ $(grep -c "refused" "$WORK/post.out") == 1 ]] || fail "expected one refusal line"
  [[ $RC != 0 ]] || fail "poststop exited 0 although it refused a link"
}

# Case 1: renamed rail, impostor in its place.
setup
ip -n "$T" link set rail0 down
ip -n "$T" link set rail0 name tx0 || fail "the tenant cannot rename the rail"
ip -n "$T" link add rail0 address "$RAIL_MAC" type veth peer name tpeer || fail "cannot make the impostor"
ip -n "$T" link set tpeer up && ip -n "$T" link set rail0 up
IMP=$(ip -n "$T" -j link show rail0 | jq '.[0].ifindex')
poststop
check_impostor_stayed "$IMP"
# The real rail is back under its name, with its address and route: its other end is the wire.
ip -n "$H" -j link show rail0 | jq -e --argjson i "$RAIL_IFINDEX" '.[0].ifindex == $i' >/dev/null ||
  fail "the host's rail0 is not the rail (ifindex $RAIL_IFINDEX): $(ip -n "$H" link show)"
ip -n "$H" -4 addr show rail0 | grep -q "192\.0\.2\.10/24" || fail "the rail lost its address"
ip -n "$H" route show 203.0.113.0/24 | grep -q "dev rail0" || fail "the rail lost its route"
[[ $(ip -n "$H" route get 192.0.2.1 | grep -o 'dev [^ ]*') == "dev rail0" ]] || fail "the rail subnet is not routed through the rail"
ip -n "$T" link show tx0 >/dev/null 2>&1 && fail "the real rail stayed with the tenant"
echo "case 1: the renamed rail came back, the impostor stayed"

# Case 2: the real rail hidden in another namespace of the tenant's, the impostor given its
# ifindex too. Fresh namespaces.
kill -KILL "$TENANT_PID" 2>/dev/null
TENANT_PID=
for ns in $H $F $T $X; do ip netns del "$ns"; ip netns add "$ns" || fail "cannot make $ns again"; done
rm -rf "$WORK/state"
setup
ip -n "$T" link set rail0 netns "$X" || fail "cannot hide the rail"
# Its peer gets the wire's ifindex where that is free (only the namespace it is in then differs
# from the rail's peer), else one of its own (a veth's peer is registered first, so it needs one).
PEER_IFINDEX=$(ip -n "$F" -j link show wire0 | jq '.[0].ifindex')
[[ $PEER_IFINDEX == "$RAIL_IFINDEX" ]] && PEER_IFINDEX=$((RAIL_IFINDEX + 50))
ip -n "$T" link add rail0 index "$RAIL_IFINDEX" address "$RAIL_MAC" type veth peer name tpeer \
  index "$PEER_IFINDEX" ||
  fail "cannot make the impostor with the rail's ifindex"
IMP=$(ip -n "$T" -j link show rail0 | jq '.[0].ifindex')
[[ $IMP == "$RAIL_IFINDEX" ]] || fail "the impostor did not get the rail's ifindex"
poststop
check_impostor_stayed "$IMP"
ip -n "$H" link show rail0 >/dev/null 2>&1 && fail "something came back as rail0 although the rail is hidden"
X_NSID=$(ip -n "$H" netns list-id | awk -v x="$X)" '$NF == x {print $2}')
[[ -n $X_NSID ]] || fail "the host has no id for the namespace the rail is hidden in"
grep -q "rail0: not found by its identity .* says it is ifindex $RAIL_IFINDEX in nsid $X_NSID: the tenant hid it there" "$WORK/post.out" ||
  fail "the hidden rail is not reported with where it is"
echo "PASS: impostors refused in the tenant's namespace, the real rail brought back where it could be found"
