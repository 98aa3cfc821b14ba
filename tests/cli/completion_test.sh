#!/usr/bin/env bash
# `gdrproxy completion bash` completes real command lines, and what it offers is the binary's own
# tree. The idea not to miss: nothing expected here is written by hand per subcommand; every
# subcommand path is found by walking the binary's --help, and at each one the script must offer
# exactly the subcommands and every option that --help lists, so a subcommand or option added to
# the binary is checked without touching this test. Also: the file the build made (and the
# install step places) is what the binary prints, and bash-completion's loader finds the installed
# file by the command's name.
# Usage: completion_test.sh GDRPROXY BUILD_DIR   (77: bash-completion is not installed, after the
# other checks passed)
set -uo pipefail
GP=$(realpath "$1")
B=$(realpath "$2")
WORK=$(mktemp -d /tmp/gdrproxy-completion.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
S=$WORK/gdrproxy.bash
"$GP" completion bash >"$S" || fail "gdrproxy completion bash exit $?"
cmp -s "$S" "$B/completion/gdrproxy" || fail "$B/completion/gdrproxy (what cmake --install places) is not what the binary prints"
bash -n "$S" || fail "the script does not parse"
if command -v shellcheck >/dev/null; then shellcheck -s bash "$S" || fail "shellcheck finds problems in the script"; fi
"$GP" completion zsh >/dev/null 2>&1 && fail "a shell it cannot write for was accepted"

# offered WORD...: what the script offers for the command line WORD... (the last word is the one
# being completed; "" completes an empty word), one per line, sorted.
offered() {
  (cd "$WORK" && bash --norc --noprofile -c '
    . "$1"; shift
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
    _gdrproxy gdrproxy "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    ((${#COMPREPLY[@]})) && printf "%s\n" "${COMPREPLY[@]}"' _ "$S" "$@" | sort)
}
expect_offered() { # WANT WORD...: WANT is the newline-separated list offered
  local want=$1 got
  shift
  got=$(offered "$@")
  [[ $got == "$want" ]] || fail "gdrproxy ${*:2}<TAB>: offered [${got//$'\n'/ }], expected [${want//$'\n'/ }]"
}
# The sections of a --help text: subcommand names, and option names of the Options: section.
help_subs() { awk '/^Subcommands:/ {s = 1; next} s && /^  [a-z]/ {print $1} s && /^$/ {s = 0}' | sort; }
help_opts() { awk '/^Options:/ {s = 1; next} s && /^  -/ {n = split($1, a, ","); for (i = 1; i <= n; i++) {sub(/\{.*/, "", a[i]); print a[i]}} s && /^$/ {s = 0}' | sort -u; }

# Every visible subcommand path of the binary, by its --help.
paths=("") checked=0
for ((k = 0; k < ${#paths[@]}; k++)); do
  read -ra p <<<"${paths[k]}"
  h=$("$GP" "${p[@]}" --help) || fail "gdrproxy ${paths[k]} --help exit $?"
  subs=$(help_subs <<<"$h")
  opts=$(help_opts <<<"$h")
  if grep -q "^Positionals:" <<<"$h"; then  # its positionals' values are offered beside them
    got=$(offered gdrproxy "${p[@]}" "")
    missing=$(comm -23 <(echo "$subs") <(echo "$got"))
    [[ -z $subs || -z $missing ]] || fail "gdrproxy ${paths[k]} <TAB> does not offer: ${missing//$'\n'/ }"
  else
    expect_offered "$subs" gdrproxy "${p[@]}" ""
  fi
  got=$(offered gdrproxy "${p[@]}" -)
  missing=$(comm -23 <(echo "$opts") <(echo "$got"))
  [[ -z $missing ]] || fail "gdrproxy ${paths[k]} -<TAB> does not offer: ${missing//$'\n'/ }"
  extra=$(comm -13 <(echo "$opts") <(echo "$got"))
  [[ -z $extra ]] || fail "gdrproxy ${paths[k]} -<TAB> offers what --help does not list: ${extra//$'\n'/ }"
  for s in $subs; do paths+=("${paths[k]:+${paths[k]} }$s"); done
  checked=$((checked + 1))
done
((checked >= 20)) || fail "only $checked subcommand paths found: the --help walk is broken"

# Real command lines.
expect_offered agent gdrproxy ag
expect_offered completion gdrproxy comp
expect_offered --socket gdrproxy agent --so
expect_offered "$(printf '%s\n' move restore select)" gdrproxy netns ""
expect_offered "" gdrproxy demo de   # the demo's own step (device-calls) is hidden: not offered
expect_offered "$(printf '%s\n' auto off on)" gdrproxy agent --trap-copy ""
expect_offered "$(printf '%s\n' auto off on)" gdrproxy agent --trap-copy = "" # --trap-copy=<TAB>
expect_offered "$(printf '%s\n' enforce trace)" gdrproxy run --mode ""
expect_offered "$(printf '%s\n' drain judge-pending list stats)" gdrproxy agent ctl ""
expect_offered bash gdrproxy completion ""
# An option's value is not read as a subcommand: after `agent --config netns`, still agent's
# (ctl, and fd-store: the holder in the foreground).
expect_offered "$(printf '%s\n' ctl fd-store)" gdrproxy agent --config netns ""
# A file name where an option takes a path, and where a positional is free.
touch "$WORK/policy-a.json"
expect_offered policy-a.json gdrproxy run --policy policy-a
expect_offered policy-a.json gdrproxy oci prepare policy-
# After --, run's words are a command line: command names first.
offered gdrproxy run --grant uverbs0 -- bas | grep -qx bash || fail "gdrproxy run -- bas<TAB> does not offer bash"

# The installed file, found by bash-completion's loader as it finds any command's.
DESTDIR=$WORK/dest cmake --install "$B" >"$WORK/install.log" 2>&1 || { cat "$WORK/install.log"; fail "cmake --install"; }
P=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$B/CMakeCache.txt")
cmp -s "$S" "$WORK/dest$P/share/bash-completion/completions/gdrproxy" ||
  fail "cmake --install placed no $P/share/bash-completion/completions/gdrproxy, or another one"
BC=/usr/share/bash-completion/bash_completion
[[ -f $BC ]] || { echo "SKIP: the loader check needs bash-completion (scripts/setup.sh installs it); the rest passed"; exit 77; }
loaded=$(XDG_DATA_DIRS=$WORK/dest$P/share bash --norc --noprofile -c \
  '. "$1" && __load_completion gdrproxy && complete -p gdrproxy' _ "$BC" 2>&1)
[[ $loaded == "complete -F _gdrproxy gdrproxy" ]] || fail "bash-completion did not load the installed file: $loaded"
echo "PASS: completion of $checked subcommand paths matches their --help; real command lines complete; the installed file loads by name"
