#!/usr/bin/env bash
# The Debian package (cpack -G DEB) installs, upgrades and removes cleanly, into a dpkg root of
# its own (dpkg --root: this machine's packages are never touched): the binary and its
# gdrproxy-runtime link run, the agent's unit runs the installed binary, the configs grant
# nothing; an operator's edit of /etc/gdrproxy/agent.json survives an upgrade and a remove (its
# configs are conffiles) and goes only with purge; nothing is left after purge. Both places the
# bash completion the binary prints (`gdrproxy completion bash`) where bash-completion looks.
# Nothing for tests is in either: no gdrproxy-testkit, and the binary has no test helper.
# Also `cmake --install` into a DESTDIR twice: the second keeps the edited config.
# Usage: deb_test.sh BUILD_DIR   (needs cpack and dpkg; 77 = skipped)
set -uo pipefail
B=$(realpath "$1")
command -v cpack >/dev/null && command -v dpkg >/dev/null || { echo "SKIP: no cpack or dpkg"; exit 77; }
WORK=$(mktemp -d /tmp/gdrproxy-deb.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# cmake --install, twice, with an edit between.
DESTDIR=$WORK/dest cmake --install "$B" >"$WORK/install.log" 2>&1 || { cat "$WORK/install.log"; fail "cmake --install"; }
P=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$B/CMakeCache.txt")
for f in "$P/bin/gdrproxy" "$P/bin/gdrproxy-runtime" "$P/lib/gdrproxy/gdr-harness" /etc/gdrproxy/agent.json \
         /etc/gdrproxy/runtime.json "$P/lib/systemd/system/gdrproxy-agent.service" \
         "$P/share/bash-completion/completions/gdrproxy"; do
  [[ -e $WORK/dest$f ]] || fail "cmake --install placed no $f"
done
testkit=$(find "$WORK/dest" -name 'gdrproxy-testkit*' | head -1)
[[ -z $testkit ]] || fail "cmake --install placed the tests' tool: $testkit"
echo '{"version": 1, "containers": [], "comment": "the operator'"'"'s"}' >"$WORK/dest/etc/gdrproxy/agent.json"
DESTDIR=$WORK/dest cmake --install "$B" >"$WORK/install2.log" 2>&1 || fail "second cmake --install"
grep -q "the operator's" "$WORK/dest/etc/gdrproxy/agent.json" || fail "cmake --install overwrote the operator's agent.json"

# The package, and a second one of a later version made from it.
(cd "$B" && cpack -G DEB -B "$WORK/pkg" >"$WORK/cpack.log" 2>&1) || { tail "$WORK/cpack.log"; fail "cpack"; }
deb=$(ls "$WORK"/pkg/gdrproxy_*.deb) || fail "no package"
dpkg-deb -R "$deb" "$WORK/next"
sed -i 's/^Version: .*/&+1/' "$WORK/next/DEBIAN/control"
dpkg-deb -b "$WORK/next" "$WORK/next.deb" >/dev/null || fail "repack"

R=$WORK/root
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates"
touch "$R/var/lib/dpkg/status" "$R/var/lib/dpkg/available"
dp() { dpkg --root="$R" --force-depends --force-not-root --log=/dev/null "$@"; }
dp -i "$deb" >"$WORK/dpkg.log" 2>&1 || { cat "$WORK/dpkg.log"; fail "dpkg -i"; }
"$R/usr/bin/gdrproxy" --help >/dev/null || fail "the installed gdrproxy does not run"
! dpkg-deb -c "$deb" | grep -q testkit || fail "the package holds the tests' tool"
for helper in standin exercise; do
  "$R/usr/bin/gdrproxy" "$helper" true >/dev/null 2>&1
  [[ $? == 2 ]] || fail "the installed gdrproxy knows the tests' helper '$helper'"
done
[[ $(readlink "$R/usr/bin/gdrproxy-runtime") == gdrproxy ]] || fail "no gdrproxy-runtime link"
grep -q "^ExecStart=/usr/bin/gdrproxy agent" "$R/usr/lib/systemd/system/gdrproxy-agent.service" ||
  fail "the unit does not run the installed binary"
jq -e '.grants == []' "$R/etc/gdrproxy/runtime.json" >/dev/null || fail "the installed runtime.json grants devices"
"$R/usr/bin/gdrproxy" completion bash | cmp - "$R/usr/share/bash-completion/completions/gdrproxy" ||
  fail "the package's bash completion is not what its binary prints"
[[ $(dpkg-query --admindir="$R/var/lib/dpkg" -W -f '${Conffiles}' gdrproxy | grep -c /etc/gdrproxy/) == 2 ]] ||
  fail "the configs are not conffiles"
echo '{"version": 1, "containers": [], "comment": "the operator'"'"'s"}' >"$R/etc/gdrproxy/agent.json"
dp --force-confold -i "$WORK/next.deb" >"$WORK/dpkg2.log" 2>&1 || { cat "$WORK/dpkg2.log"; fail "upgrade"; }
[[ $(dpkg-query --admindir="$R/var/lib/dpkg" -W -f '${Version}' gdrproxy) == *+1 ]] || fail "not upgraded"
grep -q "the operator's" "$R/etc/gdrproxy/agent.json" || fail "the upgrade overwrote the operator's agent.json"
dp -r gdrproxy >"$WORK/dpkg3.log" 2>&1 || { cat "$WORK/dpkg3.log"; fail "remove"; }
[[ ! -e $R/usr/bin/gdrproxy && -f $R/etc/gdrproxy/agent.json ]] || fail "remove: binary left or config gone"
dp -P gdrproxy >"$WORK/dpkg4.log" 2>&1 || { cat "$WORK/dpkg4.log"; fail "purge"; }
left=$(find "$R" -mindepth 1 -not -path "$R/var/lib/dpkg*" -not -path "$R/var" -not -path "$R/var/lib" | head -5)
[[ -z $left ]] || fail "left after purge: $left"
echo "PASS: package $(basename "$deb") ($(du -h "$deb" | cut -f1)): installs, upgrades keeping the operator's config, removes, purges clean; cmake --install keeps it too"
