#!/usr/bin/env bash
# Runs the real consumers of a synthetic sysfs tree against one fixture and one selection:
#   snapshot -> build -> verify, then in a private mount namespace with the mount plan applied:
#   hwloc (lstopo --whole-io) on the built tree must show the source's I/O tree restricted to the
#   selection; libibverbs (ibv_devices, with SYSFS_PATH and with the tree mounted at /sys) must
#   list exactly the selected RDMA devices with their GUIDs; NCCL's path types (realpath + parent
#   walk, `gdrproxy sysfs affinity`) must be the source's for every GPU-NIC pair.
#
# usage: consumers.sh GDRPROXY FIXTURE WORKDIR GPUS NICS EXPECT_GPUS EXPECT_IB
#   WORKDIR       scratch directory (removed at exit); a relative name is the prefix of a new
#                 one under $TMPDIR (NAME.XXXXXX), so that runs side by side never share it
#   FIXTURE       a fixture name for prepare_fixture.sh, or an existing file-system root (sys/, proc/)
#   GPUS, NICS    --gpus/--nics values ("-" = option not given: the defaults)
#   EXPECT_GPUS   GPUs the tree must expose (comma separated, "" for none)
#   EXPECT_IB     RDMA devices the tree must expose
#   BUILD_FLAGS   optional extra `build` flags (e.g. --live-ports)
# KEEP_WORK=1 in the environment keeps WORKDIR for inspection.
set -euo pipefail
if [[ $(id -u) != 0 ]]; then echo "SKIP: needs root (mount namespaces, bind mounts)" >&2; exit 77; fi
GDRPROXY=$(realpath "$1"); FIXTURE=$2; WORK=$3; GPUS=$4; NICS=$5; EXPECT_GPUS=$6; EXPECT_IB=$7
BUILD_FLAGS=${8:-}
HERE=$(cd "$(dirname "$0")" && pwd)
if [[ $WORK == /* ]]; then
  rm -rf "$WORK"; mkdir -p "$WORK"
else
  # A directory of this run's own: two test runs side by side (a second ctest) must not remove
  # each other's trees.
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/${WORK//\//.}.XXXXXX")
fi
WORK=$(realpath "$WORK")
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT
[[ -n ${KEEP_WORK:-} ]] && trap - EXIT
if [[ -d $FIXTURE ]]; then
  SRC=$(realpath "$FIXTURE")
else
  "$HERE/prepare_fixture.sh" "$FIXTURE" "$WORK/src"
  SRC=$WORK/src
fi
fail() { echo "FAIL: $*" >&2; exit 1; }

sel=()
[[ $GPUS != - ]] && sel+=(--gpus "$GPUS")
[[ $NICS != - ]] && sel+=(--nics "$NICS")

"$GDRPROXY" sysfs snapshot --root "$SRC" -o "$WORK/snap.json"
# shellcheck disable=SC2086
"$GDRPROXY" sysfs build --snapshot "$WORK/snap.json" --out "$WORK/tree" "${sel[@]}" $BUILD_FLAGS
if [[ $BUILD_FLAGS != *--live-ports* ]]; then
  "$GDRPROXY" sysfs verify "$WORK/tree" || fail "verify found violations in the built tree"
fi
"$GDRPROXY" sysfs mount-plan --snapshot "$WORK/snap.json" --tree "$WORK/tree" --host-root "$SRC" \
  "${sel[@]}" > "$WORK/plan.json"

# What the tree must contain, computed from the source fixture directly (not through gdrproxy).
netdevs=""
if [[ $NICS != - ]]; then
  for n in ${NICS//,/ }; do [[ -e "$SRC/sys/class/net/$n" ]] && netdevs+="$n,"; done
fi
{ read -r expect_pci; read -r expect_osdev; } < <(python3 "$HERE/expected_closure.py" "$SRC/sys" \
  "$EXPECT_GPUS" "$EXPECT_IB" "$netdevs")
got_pci=$(ls "$WORK/tree/bus/pci/devices" | sort | paste -sd,)
[[ $got_pci == "$expect_pci" ]] || fail "tree has PCI functions [$got_pci], expected [$expect_pci]"
expect_ibv=""
for d in ${EXPECT_IB//,/ }; do
  guid=$(tr -d ':\n' < "$SRC/sys/class/infiniband/$d/node_guid")
  expect_ibv+="$d $guid"$'\n'
done
expect_ibv=$(sort <<< "$expect_ibv" | sed '/^$/d')

# NCCL view of the source, outside the namespace (errors for devices outside the selection, such as
# a non-PCI RDMA device, do not matter here).
"$GDRPROXY" sysfs affinity "$SRC/sys" > "$WORK/nccl-src.txt" 2>/dev/null || true

# Everything below runs in a private mount namespace: the plan's bind mounts and the test's /dev
# and /sys mounts vanish with it.
export GDRPROXY SRC WORK HERE EXPECT_GPUS EXPECT_IB expect_ibv expect_pci expect_osdev
unshare -m --propagation private bash -euo pipefail -c '
fail() { echo "FAIL: $*" >&2; exit 1; }
# Apply the plan as the OCI hook will: live port mounts on the tree, then the tree bound read-only
# at the container'\''s sys directory ($WORK/sys here, /sys further down).
mkdir "$WORK/sys"
"$GDRPROXY" sysfs mount --plan "$WORK/plan.json" --at "$WORK/sys"
"$GDRPROXY" sysfs verify "$WORK/sys" || fail "verify found violations in the tree with the plan applied"
if : 2>/dev/null > "$WORK/sys/class/infiniband_verbs/abi_version"; then fail "the mounted tree is writable"; fi

# --- hwloc -------------------------------------------------------------------------------------
mkdir -p "$WORK/root/proc"; ln -s "$WORK/sys" "$WORK/root/sys"
lstopo-no-graphics --if fsroot -i "$SRC" --whole-io --of xml -f "$WORK/src.xml" 2>"$WORK/lstopo-src.err" \
  || { cat "$WORK/lstopo-src.err"; fail "lstopo on the source"; }
lstopo-no-graphics --if fsroot -i "$WORK/root" --whole-io --of xml -f "$WORK/built.xml" 2>"$WORK/lstopo-built.err" \
  || { cat "$WORK/lstopo-built.err"; fail "lstopo on the built tree"; }
python3 "$HERE/hwloc_io_tree.py" "$WORK/src.xml" --keep "$expect_pci" --keep-osdev "$expect_osdev" \
  > "$WORK/hwloc-src.txt"
python3 "$HERE/hwloc_io_tree.py" "$WORK/built.xml" > "$WORK/hwloc-built.txt"
diff -u "$WORK/hwloc-src.txt" "$WORK/hwloc-built.txt" || fail "hwloc sees a different I/O tree"
for d in ${EXPECT_IB//,/ }; do
  grep -q "OSDev $d " "$WORK/hwloc-built.txt" || fail "hwloc shows no OpenFabrics device $d"
done
for g in ${EXPECT_GPUS//,/ }; do
  grep -q "PCIDev pci_busid=$g " "$WORK/hwloc-built.txt" || fail "hwloc shows no GPU $g"
done
echo "hwloc: $(grep -c . "$WORK/hwloc-built.txt") I/O objects, same as the source restricted to the selection"

# --- libibverbs ----------------------------------------------------------------------------------
if python3 -c "import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 20)" 2>/dev/null; then
  echo "SKIP libibverbs: NETLINK_RDMA is available here, libibverbs would ignore sysfs" >&2
  exit 77
fi
# The container gets /dev/infiniband nodes for what it is granted; give it every host uverbs node so
# that only the tree decides what is listed. libibverbs only stat()s them to enumerate.
# The fake /dev is built on the side and then bound over /dev, keeping /dev/shm (where $TMPDIR
# may be) visible through it.
devroot=$WORK/devroot; mkdir -p "$devroot"
mount -t tmpfs -o mode=755 gdrproxy-test-dev "$devroot"
mknod -m 666 "$devroot/null" c 1 3
mkdir "$devroot/infiniband" "$devroot/shm"
find "$SRC/sys/devices" -path "*/infiniband_verbs/uverbs*" -prune |
  while read -r u; do : > "$devroot/infiniband/$(basename "$u")"; done
mount --rbind /dev/shm "$devroot/shm"
mount --rbind "$devroot" /dev
list() { "$@" ibv_devices | awk "NR>2 {print \$1, \$2}" | sort | sed "/^$/d"; }
got=$(list env SYSFS_PATH="$WORK/sys")
[[ "$got" == "$expect_ibv" ]] || fail "SYSFS_PATH ibv_devices listed [$got], expected [$expect_ibv]"
mount --rbind "$WORK/sys" /sys
got=$(list env -u SYSFS_PATH)
[[ "$got" == "$expect_ibv" ]] || fail "ibv_devices with the tree at /sys listed [$got], expected [$expect_ibv]"
# hwloc as a process in the container runs it: no -i, the tree is /sys.
lstopo-no-graphics --whole-io --of xml -f "$WORK/live.xml" 2>/dev/null || fail "lstopo with the tree at /sys"
python3 "$HERE/hwloc_io_tree.py" "$WORK/live.xml" > "$WORK/hwloc-live.txt"
diff -u "$WORK/hwloc-src.txt" "$WORK/hwloc-live.txt" || fail "hwloc with the tree at /sys sees a different I/O tree"
echo "hwloc with the tree at /sys: same I/O tree"
echo "libibverbs: lists exactly [${expect_ibv//$'\''\n'\''/; }]"
' || { rc=$?; [[ $rc == 77 ]] && exit 77; exit $rc; }

# --- NCCL path types -----------------------------------------------------------------------------
"$GDRPROXY" sysfs affinity "$WORK/tree" > "$WORK/nccl-built.txt" \
  || fail "NCCL-style walk failed on the built tree"
gpus=$(cut -d' ' -f1 "$WORK/nccl-built.txt" | sort -u | paste -sd,)
nics=$(cut -d' ' -f2 "$WORK/nccl-built.txt" | sort -u | paste -sd,)
if [[ -n $EXPECT_IB && -n $EXPECT_GPUS ]]; then
  [[ $gpus == "$(tr , '\n' <<< "$EXPECT_GPUS" | sort | paste -sd,)" ]] || fail "NCCL sees GPUs [$gpus]"
  [[ $nics == "$(tr , '\n' <<< "$EXPECT_IB" | sort | paste -sd,)" ]] || fail "NCCL sees NICs [$nics]"
fi
while read -r line; do
  grep -qxF "$line" "$WORK/nccl-src.txt" || fail "path type differs from the source: $line (source: $(grep "^${line% *} " "$WORK/nccl-src.txt"))"
done < "$WORK/nccl-built.txt"
echo "NCCL: $(grep -c . "$WORK/nccl-built.txt") GPU-NIC pairs, path types equal to the source"
echo PASS
