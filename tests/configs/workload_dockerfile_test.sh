#!/usr/bin/env bash
# Static checks of configs/containers/workload (the image is not built here: no registry).
#   1. every variable the Dockerfile uses is an ARG with a default before the first FROM, or an
#      ENV; and inside each stage it is declared again (Docker forgets ARGs at each FROM);
#   2. the README's version table matches the ARG defaults, and lists every *_VERSION/_TAG/_COMMIT;
#   3. the prefix libfabric is configured with is the ARG passed to NIXL's -Dlibfabric_path;
#   4. the base image's UCX is removed before UCX is built, and before the built UCX is copied
#      into the final stage;
#   5. versions.json (built into `gdrproxy doctor`) names, for UCX, libfabric, NIXL and NCCL, an
#      ARG whose default is its `tag`, and a `version` that is that tag without its "v".
# The same checks then run on broken copies, each of which must fail.
# Usage: workload_dockerfile_test.sh [SOURCE_DIR]
set -u
src=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
dir=$src/configs/containers/workload

# versions.json as "component arg tag version" lines (version "-" when null), or a problem line.
versions_lines() {
  python3 - "$1" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
    for key, c in j["components"].items():
        v = c.get("version")
        print(key, c.get("arg", "-"), c.get("tag", "-"), "-" if v is None else v)
except Exception as e:
    print("unreadable", "-", "-", "-", str(e).replace(" ", "_"))
PY
}

# Prints problems; returns 1 if there are any.
check() {
  local df=$1 readme=$2 vj=$3 vl
  vl=$(mktemp)
  versions_lines "$vj" >"$vl"
  awk -v readme="$readme" -v versions="$vl" '
    function problem(s) { print "  " s; bad = 1 }
    # Joins continuation lines so each instruction is one record.
    { line = $0; sub(/^[ \t]+/, "", line) }
    line ~ /^#/ { next }
    { if (cont != "") line = cont " " line; if (line ~ /\\$/) { sub(/\\$/, "", line); cont = line; next } cont = "" }
    line == "" { next }
    { n++; instr[n] = line }
    END {
      stage = 0
      for (i = 1; i <= n; i++) {
        l = instr[i]; split(l, w, /[ \t]+/); op = toupper(w[1])
        if (op == "FROM") { stage++; delete declared; delete envset; from[stage] = i }
        if (op == "ARG") {
          name = w[2]; sub(/=.*/, "", name)
          if (stage == 0) { if (w[2] ~ /=/) { global[name] = 1; def = w[2]; sub(/^[^=]*=/, "", def); gsub(/"/, "", def); defaults[name] = def } else problem("global ARG " name " has no default") }
          else { declared[name] = 1; if (!(name in global) && w[2] !~ /=/) problem("stage ARG " name " has no default and no global one") }
          continue
        }
        if (op == "ENV") { e = l; sub(/^ENV[ \t]+/, "", e); nm = e; sub(/[= ].*/, "", nm); envset[nm] = 1; everenv[nm] = 1 }
        # Variables used: ${NAME...} and $NAME, upper case (shell locals are lower case).
        s = l
        while (match(s, /\$\{?[A-Z_][A-Z0-9_]*/)) {
          v = substr(s, RSTART, RLENGTH); gsub(/[${]/, "", v); s = substr(s, RSTART + RLENGTH)
          if (v == "PATH") continue
          if (op == "FROM") { if (!(v in global)) problem("FROM uses " v ", not a global ARG with a default"); continue }
          if (v in envset || v in declared) continue
          if (v in everenv) { problem("stage " stage " uses ENV " v " set only in another stage"); continue }
          if (v in global) problem("stage " stage " uses ARG " v " without declaring it again (instruction: " substr(l, 1, 60) "...)")
          else problem("uses " v ", which is neither an ARG with a default nor an ENV")
        }
        if (l ~ /libfabric/ && l ~ /\.\/configure/ && match(l, /--prefix="?\$\{[A-Z_]+\}/)) { p = substr(l, RSTART, RLENGTH); sub(/.*\{/, "", p); sub(/\}/, "", p); lf_prefix = p }
        if (match(l, /-Dlibfabric_path="?\$\{[A-Z_]+\}/)) { p = substr(l, RSTART, RLENGTH); sub(/.*\{/, "", p); sub(/\}/, "", p); nixl_lf = p }
        if (l ~ /rm -rf/ && l ~ /\/opt\/hpcx\/ucx/ && l ~ /\/usr\/lib\/ucx/) removed[stage] = i
        if (l ~ /openucx\/ucx/ && !(stage in ucx_build)) ucx_build[stage] = i
        if (op == "COPY" && l ~ /\/stage\/ucx/) ucx_copy[stage] = i
      }
      # 3. libfabric prefix.
      if (lf_prefix == "") problem("no libfabric configure --prefix=${ARG} found")
      if (nixl_lf == "") problem("no -Dlibfabric_path=${ARG} in NIXL'"'"'s meson setup")
      if (lf_prefix != "" && nixl_lf != "" && lf_prefix != nixl_lf)
        problem("libfabric is installed under ${" lf_prefix "} but NIXL is built with -Dlibfabric_path=${" nixl_lf "}")
      # 4. UCX removal before the UCX build and before the final copy.
      if (length(ucx_build) == 0) problem("no UCX build (openucx/ucx) found")
      for (st in ucx_build) if (!(st in removed) || removed[st] > ucx_build[st])
        problem("stage " st " builds UCX without first removing the base image'"'"'s UCX (/opt/hpcx/ucx, /usr/lib/ucx)")
      for (st in ucx_copy) if (!(st in removed) || removed[st] > ucx_copy[st])
        problem("stage " st " copies the built UCX without first removing the base image'"'"'s UCX")
      # 2. README table: | Component | `ARG` | `version` | why |
      while ((getline r < readme) > 0) {
        if (r !~ /^\|/) continue
        c = split(r, cell, "|")
        a = cell[3]; ver = cell[4]; gsub(/^[ \t]+|[ \t]+$/, "", a); gsub(/^[ \t]+|[ \t]+$/, "", ver)
        if (a !~ /^`[A-Z0-9_]+`$/) continue
        gsub(/`/, "", a); intable[a] = 1
        if (!(a in defaults)) { problem("README table names ARG " a ", which the Dockerfile does not declare"); continue }
        if (ver !~ /^`.*`$/) continue  # e.g. NCCL: "the base image'"'"'s"
        gsub(/`/, "", ver)
        if (ver != defaults[a]) problem("README table: " a " = " ver ", Dockerfile default: " defaults[a])
      }
      for (a in defaults) if (a ~ /(_VERSION|_TAG|_COMMIT)$/ && !(a in intable)) problem("ARG " a " is missing from the README table")
      # 5. versions.json: component arg tag version
      while ((getline r < versions) > 0) {
        split(r, f, " ")
        if (f[1] == "unreadable") { problem("versions.json unreadable: " f[5]); continue }
        comp[f[1]] = 1
        if (!(f[2] in defaults)) { problem("versions.json: " f[1] " names ARG " f[2] ", which the Dockerfile does not declare"); continue }
        if (f[3] != defaults[f[2]]) problem("versions.json: " f[1] " tag " f[3] ", Dockerfile " f[2] " default: " defaults[f[2]])
        want = f[3]; sub(/^v/, "", want)
        if (f[4] != "-" && f[4] != want) problem("versions.json: " f[1] " version " f[4] " is not its tag " f[3])
      }
      for (c in need) if (!(c in comp)) problem("versions.json has no component " c)
      exit bad
    }
    BEGIN { need["ucx"] = 1; need["libfabric"] = 1; need["nixl"] = 1; need["nccl"] = 1 }' "$df"
  local rc=$?
  rm -f "$vl"
  return $rc
}

fail=0
echo "checking $dir"
if ! check "$dir/Dockerfile" "$dir/README.md" "$dir/versions.json"; then
  echo "FAIL: configs/containers/workload does not pass its checks"
  fail=1
fi

# Each broken copy must be caught.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mutate() {  # NAME EXPECTED-MESSAGE SED-EXPR [README.md|versions.json]
  local name=$1 expect=$2 expr=$3 which=${4:-Dockerfile}
  cp "$dir/Dockerfile" "$tmp/Dockerfile"; cp "$dir/README.md" "$tmp/README.md"; cp "$dir/versions.json" "$tmp/versions.json"
  sed -i -e "$expr" "$tmp/$which"
  if cmp -s "$tmp/$which" "$dir/$which"; then echo "FAIL: mutation '$name' changed nothing"; fail=1; return; fi
  if check "$tmp/Dockerfile" "$tmp/README.md" "$tmp/versions.json" >"$tmp/out"; then
    echo "FAIL: mutation '$name' was not caught"; fail=1
  elif ! grep -q -- "$expect" "$tmp/out"; then
    echo "FAIL: mutation '$name' failed for another reason:"; cat "$tmp/out"; fail=1
  else
    echo "ok: mutation '$name' caught: $(grep -m1 -- "$expect" "$tmp/out" | sed 's/^ *//')"
  fi
}
mutate "ARG without default" "has no default" 's/^ARG NIXL_VERSION=.*/ARG NIXL_VERSION/'
mutate "ARG not declared in the stage" "without declaring it again" '0,/^ARG NCCL_TESTS_VERSION$/{/^ARG NCCL_TESTS_VERSION$/d}'
mutate "undeclared variable" "neither an ARG" 's/--branch "${NIXL_VERSION}"/--branch "${NIXL_REF}"/'
mutate "README version differs" "README table: UCX_VERSION" 's/| `v1.22.0` |/| `v1.21.0` |/' README.md
mutate "version missing from README" "GRPC_VERSION is missing" '/`GRPC_VERSION`/d' README.md
mutate "libfabric prefix not NIXL's" "-Dlibfabric_path" 's/-Dlibfabric_path="${LIBFABRIC_PREFIX}"/-Dlibfabric_path="${DEPS_PREFIX}"/'
mutate "UCX built before removal" "without first removing" '0,/^RUN rm -rf \/opt\/hpcx\/ucx/{s/^RUN rm -rf \/opt\/hpcx\/ucx \/usr\/lib\/ucx/RUN true/}'
mutate "versions.json version not its tag" "version 1.21.0 is not its tag" 's/"version": "1.22.0"/"version": "1.21.0"/' versions.json
mutate "versions.json tag not the ARG default" "ucx tag v1.23.0, Dockerfile UCX_VERSION default" 's/"tag": "v1.22.0"/"tag": "v1.23.0"/' versions.json
mutate "Dockerfile ARG bumped, versions.json not" "libfabric tag v1.21.0, Dockerfile LIBFABRIC_VERSION default: v1.22.0" 's/^ARG LIBFABRIC_VERSION=v1.21.0/ARG LIBFABRIC_VERSION=v1.22.0/'
mutate "versions.json component missing" "versions.json has no component nixl" 's/"nixl": {/"nixl_old": {/' versions.json
mutate "versions.json not JSON" "versions.json unreadable" 's/"components": {/"components": {,/' versions.json
exit $fail
