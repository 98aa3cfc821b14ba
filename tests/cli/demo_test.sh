#!/usr/bin/env bash
# `gdrproxy demo` end to end: it succeeds within 30 s, raises no false alarm, explains what looks
# like a failure where it appears, shows all three components (the rail launcher's select, move
# and restore with the values they set), and leaves no namespace, interface, process or temporary
# directory behind. Needs root (mount and network namespaces); exits 77 (skipped) otherwise.
#
#   tests/cli/demo_test.sh path/to/gdrproxy
set -euo pipefail
bin=$(realpath "$1")
limit_s=30
[[ $EUID -eq 0 ]] || { echo "SKIP: needs root"; exit 77; }
# Run in a network and mount namespace of its own, with its own /run/netns and TMPDIR, and count
# only the processes in that network namespace: what the checks below compare is then what the
# demo did, not what tests running beside it (a second ctest) did to the host meanwhile.
if [[ -z ${GDRPROXY_DEMO_TEST_INNER:-} ]]; then
  GDRPROXY_DEMO_TEST_INNER=1 exec unshare --net --mount --propagation private "$0" "$@"
fi
mkdir -p /run/netns && mount -t tmpfs none /run/netns
ip link set lo up
TMPDIR=$(mktemp -d /tmp/gdrproxy-demotest.XXXXXX)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
own_net=$(readlink /proc/self/ns/net)

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -qF -- "$1" <<<"$out"; }

# What the demo must leave as it found it.
netns_list() { ip netns list 2>/dev/null | awk '{print $1}' | sort; }
link_names() { ip -o link show | awk -F': ' '{print $2}' | sort; }
demo_dirs() { find "$TMPDIR" -maxdepth 1 -name "gdrproxy-demo-*" 2>/dev/null | sort || true; }
procs_of_bin() {
  for p in /proc/[0-9]*; do
    [[ "$(readlink "$p/exe" 2>/dev/null)" == "$bin" && "$(readlink "$p/ns/net" 2>/dev/null)" == "$own_net" ]] &&
      echo "${p#/proc/}"
  done | sort || true
}
netns_before=$(netns_list) links_before=$(link_names) dirs_before=$(demo_dirs)
procs_before=$(procs_of_bin)

start=$(date +%s%N)
set +e
out=$(timeout 60 "$bin" demo 2>&1)
rc=$?
set -e
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
echo "$out"
echo "--- gdrproxy demo: exit $rc after ${elapsed_ms} ms"

[[ $rc -eq 0 ]] || fail "demo exited $rc"
((elapsed_ms < limit_s * 1000)) || fail "demo took ${elapsed_ms} ms (limit ${limit_s} s)"

# No false alarm about NVIDIA where there is no NVIDIA driver.
if [[ ! -e /proc/driver/nvidia/version ]] && has "not in this build's ABI tables"; then
  fail "NVIDIA ABI warning on a machine without an NVIDIA driver"
fi
# Stand-ins are said plainly, once, where they are used.
if [[ ! -e /dev/infiniband/uverbs0 ]]; then
  n=$(grep -c "STAND-INS" <<<"$out" || true)
  [[ $n -eq 1 ]] || fail "stand-in devices are announced $n times, not once"
fi
# libibverbs' "Failed to get IB devices list" never stands without its explanation right below.
if ! awk '/Failed to get IB devices list/ { want = NR + 1 }
          NR == want && !/why: libibverbs/ { bad = 1 }
          END { exit bad }' <<<"$out"; then
  fail "'Failed to get IB devices list' without an explanation on the next line"
fi

# The three components.
has "== 7. Synthetic sysfs" || fail "no synthetic sysfs step"
has "path types match the host's" || fail "synthetic sysfs: container view does not match"
has "sysfs that \`select\` reads is CONSTRUCTED" || fail "constructed sysfs not said plainly"
grep -qE '^\$ .*/gdrproxy netns select --sysfs-root ' <<<"$out" || fail "no netns select command"
has "NCCL_IB_HCA==rxe0:1,rxe1:1" || fail "select did not print NCCL_IB_HCA for both rails"
grep -qE '^\$ .*/gdrproxy netns move --pid [0-9]+ --ifaces rdma0,rdma1 ' <<<"$out" ||
  fail "no netns move command"
grep -qE '^\$ .*/gdrproxy netns restore --journal ' <<<"$out" || fail "no netns restore command"
container=$(sed -n '/^Inside the container/,/^Host namespace now/p' <<<"$out")
for want in "rdma0: up, mtu 4200, inet 192.0.2.10/24" "rdma1: up, mtu 4200, inet 192.0.2.11/24" \
  "net.ipv4.conf.rdma0: arp_announce=2 arp_ignore=1 arp_filter=1 rp_filter=1" \
  "net.ipv4.conf.rdma1: arp_announce=2 arp_ignore=1 arp_filter=1 rp_filter=1" \
  "route 198.51.100.0/24 via 192.0.2.1 dev rdma0" "rule 1000: from 192.0.2.10 lookup 1000"; do
  grep -qF -- "$want" <<<"$container" || fail "container does not show: $want"
done
now=$(sed -n '/^Host namespace now/,/^\$ /p' <<<"$out")
grep -qF "rdma0: not in this network namespace" <<<"$now" || fail "rdma0 still on the host after move"
has "Host state identical to before the move" || fail "host state after restore not identical"

# The container step (root and runc): its grant, its calls in its own trace, the ungranted node
# refused.
if command -v runc >/dev/null && [[ $EUID == 0 ]]; then
  ctr=$(sed -n '/^== 9\./,$p' <<<"$out")
  grep -qF "container demo-ctr: process" <<<"$ctr" && grep -qF "grants [uverbs0]" <<<"$ctr" ||
    fail "container step: the agent's grant line is missing"
  grep -qE "^uverbs +INVOKE_WRITE\(QUERY_DEVICE\) +1 " <<<"$ctr" || fail "container step: no calls in its trace"
  grep -qF "'/tmp/uverbs1' for reading: Operation not permitted" <<<"$ctr" || fail "container step: the ungranted node was not refused"
  grep -qF "container demo-ctr ended" <<<"$ctr" || fail "container step: the session did not end"
fi

# Nothing left behind.
[[ "$(netns_list)" == "$netns_before" ]] || fail "ip netns list changed: $(diff <(echo "$netns_before") <(netns_list) || true)"
[[ "$(link_names)" == "$links_before" ]] || fail "ip link changed: $(diff <(echo "$links_before") <(link_names) || true)"
[[ "$(demo_dirs)" == "$dirs_before" ]] || fail "temporary directories left: $(demo_dirs)"
[[ "$(procs_of_bin)" == "$procs_before" ]] || fail "gdrproxy processes left: $(procs_of_bin)"

if ((fails)); then
  echo "$fails check(s) failed"
  exit 1
fi
echo "all checks passed"
