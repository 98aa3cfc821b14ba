#!/usr/bin/env bash
# Runs the Slurm plugin's task-view test (spank_task_view_test.c) with a real synthetic sysfs plan:
# the hgx-ib8 fixture's snapshot, a tree built for two of its RDMA devices (mlx5_0, mlx5_4) with
# live ports, and the mount plan binding those ports from the fixture, as `gdr-harness prepare`
# makes them for a node. Usage: spank_task_view.sh GDRPROXY TEST_BINARY
set -euo pipefail
[[ $(id -u) == 0 ]] || { echo "needs root (mount and network namespaces)"; exit 77; }
gp=$(realpath "$1")
test_bin=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/gdr-spank-view.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$here/../sysfs/prepare_fixture.sh" hgx-ib8 "$work/src" >/dev/null
"$gp" sysfs snapshot --root "$work/src" -o "$work/snapshot.json" 2>/dev/null
"$gp" sysfs build --snapshot "$work/snapshot.json" --out "$work/tree" --live-ports --nics mlx5_0,mlx5_4 2>/dev/null
"$gp" sysfs mount-plan --snapshot "$work/snapshot.json" --tree "$work/tree" --host-root "$work/src" \
  --nics mlx5_0,mlx5_4 >"$work/mount-plan.json"
GDR_TEST_GDRPROXY=$gp GDR_TEST_SYSFS_PLAN=$work/mount-plan.json "$test_bin"
