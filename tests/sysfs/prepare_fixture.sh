#!/usr/bin/env bash
# Unpacks or constructs one sysfs fixture as a file-system root (OUT/sys, OUT/proc) for the
# consumer tests. Captures are used as they are, except for what their capture tool did not save
# and a running kernel always has; each such addition is listed below and made here, not in the
# archives:
#   - hwloc-gather-topology saves neither /sys/class/pci_bus nor /sys/class/infiniband_verbs: the
#     links are derived from the captured <bridge>/pci_bus/<bus> and <pci>/infiniband_verbs/<uverbsN>
#     directories, and class/infiniband_verbs/abi_version gets the kernel's value, 6;
#   - the 32intel64 capture lists 0000:5f:03.0 under devices/ but not in bus/pci/devices (a
#     kernel lists every function there): missing bus/pci/devices links are added;
#   - the H200 capture has no CPU topology: devices/system/cpu points at this machine's.
# usage: prepare_fixture.sh NAME OUT
#   NAME: h200 | hwloc-mlx4 | hwloc-qib | hwloc-plx | hgx-ib8 | hgx-roce16 | hgx-mixed8
set -euo pipefail
NAME=$1; OUT=$2
FIX=$(cd "$(dirname "$0")/../fixtures/sysfs" && pwd)
rm -rf "$OUT"; mkdir -p "$OUT"

derive_class_links() {  # $1 = sys dir
  local sys=$1
  mkdir -p "$sys/class/pci_bus" "$sys/class/infiniband_verbs"
  (cd "$sys" && find devices -path '*/pci_bus/*' -maxdepth 12 -type d -name '*:*' -prune) |
    while read -r b; do
      [[ -e "$sys/class/pci_bus/$(basename "$b")" ]] || ln -s "../../$b" "$sys/class/pci_bus/$(basename "$b")"
    done
  (cd "$sys" && find devices -path '*/infiniband_verbs/uverbs*' -type d -prune) |
    while read -r u; do
      [[ -e "$sys/class/infiniband_verbs/$(basename "$u")" ]] ||
        ln -s "../../$u" "$sys/class/infiniband_verbs/$(basename "$u")"
    done
  [[ -e "$sys/class/infiniband_verbs/abi_version" ]] || echo 6 > "$sys/class/infiniband_verbs/abi_version"
  (cd "$sys" && find devices/pci* -type d -regextype egrep -regex '.*/[0-9a-f]{4,}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]') |
    while read -r d; do
      [[ -e "$sys/bus/pci/devices/$(basename "$d")" ]] || ln -s "../../../$d" "$sys/bus/pci/devices/$(basename "$d")"
    done
}

case $NAME in
  h200)
    tar xzf "$FIX/sysfs-h200-fc.tar.gz" -C "$OUT"
    mkdir -p "$OUT/proc"
    [[ -e "$OUT/sys/devices/system/cpu" ]] || ln -s /sys/devices/system/cpu "$OUT/sys/devices/system/cpu"
    ;;
  hwloc-mlx4|hwloc-qib|hwloc-plx)
    case $NAME in
      hwloc-mlx4) archive="32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2"; dir="32em64t-2n8c+1mic" ;;
      hwloc-qib) archive="40intel64-2g2n4c+pcilocality.tar.bz2"; dir="40intel64-2g2n4c+pci" ;;
      hwloc-plx) archive="32intel64-2p8co2t+8ve.tar.bz2"; dir="32intel64-2p8co2t+8ve" ;;
    esac
    tmp="$OUT/.unpack"; mkdir -p "$tmp"
    tar xjf "$FIX/$archive" -C "$tmp"
    mv "$tmp/$dir/sys" "$tmp/$dir/proc" "$OUT/"
    rm -rf "$tmp"
    chmod -R u+rwX "$OUT"
    derive_class_links "$OUT/sys"
    ;;
  hgx-ib8) rmdir "$OUT"; python3 "$FIX/make_hgx_tree.py" --variant ib8 "$OUT" ;;
  hgx-roce16) rmdir "$OUT"; python3 "$FIX/make_hgx_tree.py" --variant roce16 "$OUT" ;;
  hgx-mixed8) rmdir "$OUT"; python3 "$FIX/make_hgx_tree.py" --variant mixed8 "$OUT" ;;
  *) echo "prepare_fixture.sh: unknown fixture $NAME" >&2; exit 2 ;;
esac
