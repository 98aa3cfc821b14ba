#!/usr/bin/env bash
# A pod's start through containerd's CRI plugin with the runtime handler "gdrproxy" against the
# plain "runc" handler, in the same run, same image, same device (uverbs0, as a device plugin
# hands it over), and with the NIC's two rails in the pod: "gdrproxy-rails" (runtime.json's
# rails moved in by the shim's early mover) against "runc-rails" (runc, the same two netdevs
# moved in by CNI's host-device plugin, the way a pod gets a NIC natively: the handler's own CNI
# networks, eth1 and eth2 beside the bridge's eth0). RunPodSandbox + CreateContainer +
# StartContainer until the container's first device call has returned, median of N pods each
# (CRI_BENCH_PODS, default 20), printed with their ratios. The idea not to miss: the end of a
# start is seen by the container itself: after its first device call it writes to a FIFO the
# client is blocked reading, so no polling adds to either side, and the calls come from one
# client process, whose own start is not counted; the handlers alternate pod by pod in a
# rotated order, so drift of the machine falls on all. The pod's stop and removal are not timed.
# The goal is a ratio of at most 1.10 for each pair (docs/PERFORMANCE.md); the rails handler
# against plain runc (which moves no netdev) is printed beside it. As a test it fails only above
# CRI_BENCH_MAX_RATIO (default 2.0: a bound against the same run's baseline, generous enough for
# a few pods on a 2-core machine running a second suite beside it, where the ratio was seen at
# 1.4; 0 turns it off). The snapshotter is overlayfs where it works (tests/cri/lib.sh), so a
# container's rootfs is no copy whose disk time would hide the runtime's share.
# Test-rig parts as tests/cri/pod_test.sh's: stand-in device nodes, images built offline.
# Usage: [CRI_BENCH_PODS=N] [CRI_BENCH_MAX_RATIO=R] pod_start_bench.sh GDRPROXY ATTACK_CLIENT
#        (root, containerd, runc; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
A=$(realpath "$2")
BENCH=$(realpath "$(dirname "$A")/../bench/ioctl_bench")
N=${CRI_BENCH_PODS:-20}
# shellcheck source=tests/oci/lib.sh
. "$(dirname "$0")/../oci/lib.sh"
# shellcheck source=tests/cri/lib.sh
. "$(dirname "$0")/lib.sh"
cri_require
OCI_ENTER_TIMEOUT=$((120 + N * 24)) oci_enter "$GP" net "$0" "$@"
WORK=$(mktemp -d /tmp/gdrproxy-cri-bench.XXXXXX)
chmod 755 "$WORK"
AGENT_PID=''
cleanup() {
  cri_cleanup
  [[ -n $AGENT_PID ]] && { kill -KILL "$AGENT_PID" && wait "$AGENT_PID"; } 2>/dev/null
  umount -R "$WORK" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
ip link set lo up

oci_start_agent '{"version": 1, "containers": [{"match": {"id": "*"}, "grants": ["uverbs0"],
  "grants_from_metadata": true}]}' -q
RT=$WORK/bin/gdrproxy-runtime
mkdir -p "$WORK/bin" "$WORK/fifo" && ln -s "$GP" "$RT"
jq -n --arg s "$SOCK" '{version: 1, runtime: "runc", listener: $s, grants: ["uverbs0"], sysfs: false}' >"$WORK/runtime.json"
# With rails: a third handler, "gdrproxy-rails", whose runtime.json moves uverbs0's NIC's two
# netdevs into the pod (veth rails in a constructed sysfs, as tests/cri/rails_test.sh's; test
# rig: a veth backs no RDMA device, hence allow_plain_rails) and back at its container's stop.
oci_veth_rails
mkdir -p "$WORK/rsys/class/infiniband/rxe_rails/ports/1" "$WORK/rsys/class/infiniband/rxe_rails/device/infiniband_verbs/uverbs0" \
  "$WORK/rsys/class/infiniband/rxe_rails/device/net/rail0" "$WORK/rsys/class/infiniband/rxe_rails/device/net/rail1"
jq --arg sys "$WORK/rsys" --arg st "$WORK/run/rails" '. + {rails: true, sysfs_root: $sys, allow_plain_rails: true, rail_state_dir: $st}' \
  "$WORK/runtime.json" >"$WORK/runtime-rails.json"
# Its runtime is the link gdrproxy-runtime-rails, which reads runtime-rails.json beside the
# runtime.json the plain link reads, as an operator's second RuntimeClass would (no wrapper
# script, whose own start would be counted against the handler).
ln -s "$GP" "$WORK/bin/gdrproxy-runtime-rails" || fail "the rails handler's runtime"
# The baseline with rails: runc, and CNI's host-device plugin moving rail0 and rail1 into the
# pod at RunPodSandbox and back at its end (networks of this handler alone).
mkdir -p "$WORK/cni/rails.d" || fail "mkdir under $WORK"
for r in 0 1; do
  jq -n --arg n "rail$r-$$" --arg d "rail$r" '{cniVersion: "0.4.0", name: $n, plugins: [{type: "host-device", device: $d}]}' \
    >"$WORK/cni/rails.d/2$r-rail$r.conflist" || fail "the rails' CNI networks"
done
CRI_HANDLER_CNI="runc-rails=$WORK/cni/rails.d" \
  CRI_MORE_HANDLERS="gdrproxy-rails=$WORK/bin/gdrproxy-runtime-rails runc-rails=${DBG_RUNC:-$(command -v runc)}" \
  cri_containerd "$RT" "$WORK/runtime.json"
cri_images
CRI_CTR_BINDS="$(dirname "$BENCH") $WORK/fifo"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# one HANDLER I: one pod's start (cri_client.py startpod: the calls from one client process, as
# a kubelet's, timed inside it), each step's microseconds appended to $WORK/HANDLER.STEP.us;
# then the pod's end.
one() {
  local h=$1 name=bench-$1-$2 fifo=$WORK/fifo/$1-$2 pj cj out step
  mkfifo "$fifo"
  pj=$(cri_pod "$name")
  cj=$(cri_ctr "$name" app '[{"container_path": "/dev/infiniband/uverbs0", "host_path": "/dev/infiniband/uverbs0", "permissions": "rw"}]' \
    "$(jq -n --arg s "$BENCH client 1 /dev/infiniband/uverbs0 >/dev/null && echo ok >$fifo; exec sleep 60" '["sh", "-c", $s]')")
  out=$(timeout 60 /usr/bin/python3 "$CRI_LIB_DIR/cri_client.py" --socket "$CTD_SOCK" --pb-dir "$WORK/pb" startpod "$pj" "$cj" --handler "$h" --ready "$fifo") || fail "the $h pod $2 did not start"
  CRI_PODS+=("$(jq -r .pod <<<"$out")")
  [[ $(jq -r .ready <<<"$out") == ok ]] || fail "the $h pod $2 made no device call (or it failed)"
  for step in total runp create start ready; do jq -r ".${step}_us" <<<"$out" >>"$WORK/$h.$step.us"; done
  # The mover's own account (early_rails.cc): the move's time, and when the rails were handed on.
  [[ $h == gdrproxy-rails ]] && sed -n 's/.* moved in \([0-9]*\) ms; .* holds them \([0-9]*\) ms .*/\1 \2/p' \
    "$WORK/run/rails/$(jq -r .container <<<"$out")/early-move.log" >>"$WORK/moves"
  # Once per handler, untimed: a rails pod holds both rails beside its eth0 (neither side's
  # figure is of a pod without them), and they are back here, under their names, after its end.
  if [[ $2 == warm && $h == *-rails ]]; then
    cri exec "$(jq -r .container <<<"$out")" -- cat /proc/net/dev >"$WORK/$h.netdev" || fail "ExecSync into the $h pod"
    [[ $(grep -c ':' "$WORK/$h.netdev") == 4 ]] || { cat "$WORK/$h.netdev"; fail "the $h pod does not hold lo, eth0 and two rails"; }
  fi
  cri stopp "${CRI_PODS[-1]}" && cri rmp "${CRI_PODS[-1]}" || fail "ending the $h pod $2"
  unset 'CRI_PODS[-1]'
  if [[ $2 == warm && $h == *-rails ]]; then
    ip -o link show rail0 >/dev/null && ip -o link show rail1 >/dev/null || fail "the $h pod's rails did not come back"
  fi
}
# One pod each first, untimed: images unpacked into the page cache, the Python client's modules
# read, the agent's first session.
handlers=(runc gdrproxy runc-rails gdrproxy-rails)
for h in "${handlers[@]}"; do one "$h" warm; done
rm -f "$WORK"/*.us "$WORK/moves"
# Each round runs the handlers in a rotated order, so no handler always follows another.
for ((i = 0; i < N; i++)); do
  for ((k = 0; k < ${#handlers[@]}; k++)); do one "${handlers[(i + k) % ${#handlers[@]}]}" "$i"; done
done
declare -A med
for h in "${handlers[@]}"; do med[$h]=$(median <"$WORK/$h.total.us"); done
echo "CRI pod start to the first device call (RunPodSandbox + CreateContainer + StartContainer), median of $N pods each ($CRI_SNAPSHOTTER snapshotter):"
awk -v r="${med[runc]}" -v g="${med[gdrproxy]}" -v rr="${med[runc-rails]}" -v gr="${med[gdrproxy-rails]}" 'BEGIN {
  printf "  %-52s %8.1f ms\n", "runc handler (baseline)", r / 1000
  printf "  %-52s %8.1f ms  %.2fx\n", "gdrproxy handler (shim + agent)", g / 1000, g / r
  printf "  %-52s %8.1f ms\n", "runc handler, two rails by CNI host-device (baseline)", rr / 1000
  printf "  %-52s %8.1f ms  %.2fx (%.2fx runc without rails)\n", "gdrproxy handler, two rails by its early mover", gr / 1000, gr / rr, gr / r }'
# Where it goes, each step's median; ready: from StartContainer's return to the first call's.
for step in runp create start ready; do
  printf '    %-8s' "$step"
  for h in "${handlers[@]}"; do printf ' %s %7.1f ms' "$h" "$(median <"$WORK/$h.$step.us" | awk '{print $1 / 1000}')"; done
  echo
done
if [[ -s $WORK/moves ]]; then
  echo "    rails: moved in $(cut -d' ' -f1 "$WORK/moves" | median) ms, held by the container's process $(cut -d' ' -f2 "$WORK/moves" | median) ms after the move began (medians)"
fi
ratio=$(awk -v g="${med[gdrproxy]}" -v r="${med[runc]}" 'BEGIN { printf "%.2f", g / r }')
ratio_rails=$(awk -v g="${med[gdrproxy-rails]}" -v r="${med[runc-rails]}" 'BEGIN { printf "%.2f", g / r }')
echo "ratio $ratio, with rails $ratio_rails (goal <= 1.10)"
bound=${CRI_BENCH_MAX_RATIO:-2.0}
for x in "$ratio" "$ratio_rails"; do
  if [[ $bound != 0 ]] && awk -v x="$x" -v b="$bound" 'BEGIN { exit !(x > b) }'; then
    fail "ratio $x is above the bound $bound"
  fi
done
