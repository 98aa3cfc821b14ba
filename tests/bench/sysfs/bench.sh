#!/usr/bin/env bash
# Benchmark of the synthetic sysfs: snapshot and build time of the example HGX H100 node
# (8 GPUs, 8 CX7, 90 PCI functions), trees written to tmpfs (/dev/shm, as /run in production) and,
# for comparison, to the disk under /tmp. Goal: build <= 20 ms.
# usage: tests/bench/sysfs/bench.sh [BUILD_DIR]   (default build/)
set -euo pipefail
cd "$(dirname "$0")/../../.."
BUILD=${1:-build}
cmake --build "$BUILD" --target sysfs_bench >/dev/null
work=$(mktemp -d /dev/shm/gdrproxy-bench.XXXXXX)
disk=$(mktemp -d /tmp/gdrproxy-bench.XXXXXX)
trap 'rm -rf "$work" "$disk"' EXIT
tests/sysfs/prepare_fixture.sh hgx-ib8 "$work/node"
echo "== $(date -u +%FT%TZ) $(uname -r), $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "-- trees on tmpfs"
"$BUILD/tests/sysfs/sysfs_bench" "$work/node" "$work" 20
# Baseline: copying the whole source tree of the node (its captured sys/, 4000 entries) with cp -a,
# the cheapest way to produce an unfiltered tree.
best=999999
for _ in 1 2 3 4 5 6 7 8 9 10; do
  t0=$(date +%s%N); cp -a "$work/node/sys" "$work/copy"; t1=$(date +%s%N); rm -rf "$work/copy"
  ms=$(( (t1 - t0) / 1000 )); (( ms < best )) && best=$ms
done
printf "baseline  cp -a of the node's sys/ (%s entries):        min %7.2f ms\n" \
  "$(find "$work/node/sys" | wc -l)" "$(bc -l <<< "$best/1000")"
echo "-- trees on disk (/tmp)"
"$BUILD/tests/sysfs/sysfs_bench" "$work/node" "$disk" 5
echo "-- this host's own /sys"
"$BUILD/tests/sysfs/sysfs_bench" / "$work" 20
