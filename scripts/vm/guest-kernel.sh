#!/usr/bin/env bash
# Provides the Soft-RoCE VM's guest kernel: Debian's newest kernel from a backports suite
# (trixie-backports by default), unpacked into a private directory with its modules indexed by
# depmod. Nothing is installed on this machine: the packages are only unpacked.
#
# The one idea: the VM needs rxe with one UDP tunnel socket per network namespace (mainline since
# 2025; Debian 12's 6.1 has one socket, in the initial namespace only), so two containers in their
# own namespaces can carry RoCE between them. The chain of trust is Debian's: InRelease is checked
# with gpgv against this machine's debian-archive-keyring, Packages.xz against InRelease's SHA256,
# each .deb against Packages', and the unpacked rdma_rxe module must have the per-namespace sockets.
#
# Usage: scripts/vm/guest-kernel.sh [--update] DIR
#   Prints "KVER KERNEL_DIR" on stdout: KERNEL_DIR/vmlinuz and KERNEL_DIR/lib/modules/KVER.
#   A kernel already in DIR is reused without any network access; --update fetches the newest.
# Environment: GDRVM_KERNEL_SUITE (trixie-backports), GDRVM_KERNEL_MIRROR
#   (http://deb.debian.org/debian), GDRVM_KERNEL_FLAVOUR (amd64).
# Exit status: 0, or 1 with one line on stderr that says which step failed.
set -euo pipefail
update=0
[[ ${1:-} == --update ]] && { update=1; shift; }
dir=${1:?usage: guest-kernel.sh [--update] DIR}
suite=${GDRVM_KERNEL_SUITE:-trixie-backports}
mirror=${GDRVM_KERNEL_MIRROR:-http://deb.debian.org/debian}
flavour=${GDRVM_KERNEL_FLAVOUR:-amd64}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
say() { echo "guest-kernel: $*" >&2; }
fail() { say "$*"; exit 1; }

# rxe_has_netns MODULES_DIR: the rdma_rxe module there keeps a UDP socket per network namespace.
rxe_has_netns() {
  local ko n
  ko=$(find "$1" -name 'rdma_rxe.ko*' -print -quit)
  [[ -n $ko ]] || return 1
  # grep -c reads to the end: with -q, the decompressor's SIGPIPE would fail the pipeline.
  n=$(case $ko in
    *.xz) xz -dc "$ko" ;;
    *.zst) zstd -qdc "$ko" ;;
    *) cat "$ko" ;;
  esac | grep -ac rxe_ns_pernet_sk4) || true
  ((n > 0))
}

# A complete kernel from an earlier run (its "complete" marker is written last).
if ((!update)); then
  for k in "$dir"/*/complete; do
    [[ -f $k ]] || continue
    kdir=$(dirname "$k")
    echo "$(cat "$k") $kdir"
    exit 0
  done
fi

for tool in curl gpgv xz dpkg-deb depmod sha256sum; do
  command -v $tool >/dev/null || fail "$tool is missing (scripts/setup.sh installs it)"
done
[[ -r $keyring ]] || fail "$keyring is missing (package debian-archive-keyring)"
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
get() { timeout 600 curl -fsS --retry 3 -o "$2" "$1" || fail "cannot download $1"; }

say "fetching $suite's index from $mirror"
get "$mirror/dists/$suite/InRelease" "$tmp/InRelease"
gpgv --keyring "$keyring" --output "$tmp/Release" "$tmp/InRelease" 2>"$tmp/gpgv.log" ||
  fail "$suite's InRelease does not verify against $keyring: $(tail -1 "$tmp/gpgv.log")"
want=$(awk '$3 == "main/binary-amd64/Packages.xz" { print $1; exit }' "$tmp/Release")
[[ -n $want ]] || fail "$suite's Release lists no main/binary-amd64/Packages.xz"
get "$mirror/dists/$suite/main/binary-amd64/Packages.xz" "$tmp/Packages.xz"
[[ $(sha256sum <"$tmp/Packages.xz" | cut -d' ' -f1) == "$want" ]] || fail "Packages.xz does not match $suite's Release"
xz -dc "$tmp/Packages.xz" >"$tmp/Packages"

# The newest kernel of the flavour: its modules package names the version ("linux-modules-KVER").
# (The version has no hyphen, so the -cloud and -rt flavours do not match.)
kver=$(sed -n "s/^Package: linux-modules-\\([0-9][^ -]*-$flavour\\)\$/\\1/p" "$tmp/Packages" | sort -V | tail -1)
[[ -n $kver ]] || fail "$suite has no linux-modules-*-$flavour package"
# field PACKAGE NAME: that field of PACKAGE's stanza.
field() { awk -v p="Package: $1" -v f="$2: " '$0 == p { on = 1; next } /^$/ { on = 0 } on && index($0, f) == 1 { print substr($0, length(f) + 1); exit }' "$tmp/Packages"; }
# Older kernels ship one linux-image package; newer ones split it into binary, modules and base
# (modules.order and modules.builtin, which depmod needs). The linux-image package of a split
# kernel is only the meta package.
pkgs=()
for p in "linux-base-$kver" "linux-binary-$kver" "linux-modules-$kver" "linux-image-$kver-unsigned" "linux-image-$kver"; do
  [[ -n $(field "$p" Filename) ]] && pkgs+=("$p")
done
((${#pkgs[@]} > 0)) || fail "$suite lists no package for kernel $kver"
root=$tmp/root
for p in "${pkgs[@]}"; do
  file=$(field "$p" Filename) sum=$(field "$p" SHA256)
  say "downloading $p ($(($(field "$p" Size) / 1048576)) MiB)"
  get "$mirror/$file" "$tmp/pkg.deb"
  [[ $(sha256sum <"$tmp/pkg.deb" | cut -d' ' -f1) == "$sum" ]] || fail "$p does not match $suite's Packages"
  dpkg-deb -x "$tmp/pkg.deb" "$root" || fail "cannot unpack $p"
  rm -f "$tmp/pkg.deb"
done

# Lay the kernel out as KERNEL_DIR/{vmlinuz,lib/modules/KVER} and index its modules.
kdir=$tmp/$kver
mkdir -p "$kdir/lib/modules"
for m in "$root/usr/lib/modules/$kver" "$root/lib/modules/$kver"; do
  [[ -d $m ]] && mv "$m" "$kdir/lib/modules/$kver" && break
done
[[ -d $kdir/lib/modules/$kver ]] || fail "kernel $kver's packages hold no modules directory"
for v in "$kdir/lib/modules/$kver/vmlinuz" "$root/boot/vmlinuz-$kver"; do
  [[ -f $v ]] && mv "$v" "$kdir/vmlinuz" && break
done
[[ -f $kdir/vmlinuz ]] || fail "kernel $kver's packages hold no vmlinuz"
depmod -b "$kdir" "$kver" || fail "depmod failed for $kver"
rxe_has_netns "$kdir/lib/modules/$kver" ||
  fail "kernel $kver's rdma_rxe has no per-namespace UDP sockets; the VM's container test needs them"
echo "$kver" >"$kdir/complete"
# Replace an older kernel only once the new one is whole.
for old in "$dir"/*/complete; do [[ -f $old ]] && rm -rf "$(dirname "$old")"; done
rm -rf "${dir:?}/$kver"
mv "$kdir" "$dir/$kver"
say "kernel $kver ready in $dir/$kver"
echo "$kver $dir/$kver"
