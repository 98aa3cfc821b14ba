#!/usr/bin/env bash
# Checks that configs/examples/hgx-h100-8gpu-8nic.snapshot.json is what `gdrproxy sysfs snapshot`
# makes of the constructed HGX H100 ib8 tree (only the "source" field may differ), so the example
# the demo embeds cannot drift from the fixture and the capture code.
# usage: example_snapshot_current.sh GDRPROXY EXAMPLE_JSON WORKDIR
set -euo pipefail
# WORKDIR is a prefix: this run's tree is WORKDIR.XXXXXX, so that runs side by side (a second
# ctest) never remove each other's.
GDRPROXY=$1; EXAMPLE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$(dirname "$3")"
WORK=$(mktemp -d "$3.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
"$HERE/prepare_fixture.sh" hgx-ib8 "$WORK"
"$GDRPROXY" sysfs snapshot --root "$WORK" -o "$WORK.json" 2>/dev/null
trap 'rm -rf "$WORK" "$WORK.json"' EXIT
python3 - "$EXAMPLE" "$WORK.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
a.pop("source"); b.pop("source")
if a != b:
    sys.exit("example snapshot is stale: regenerate it with tests/sysfs/prepare_fixture.sh hgx-ib8 DIR "
             "&& gdrproxy sysfs snapshot --root DIR -o configs/examples/hgx-h100-8gpu-8nic.snapshot.json")
print("example snapshot is current")
PY
