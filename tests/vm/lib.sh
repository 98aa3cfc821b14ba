# shellcheck shell=bash
# Helpers of the Soft-RoCE guest tests (sourced by tests/vm/run-tests.sh and tests/vm/bench.sh;
# they run inside the VM that scripts/rxe-vm.sh boots, as root, on the host's root filesystem).
#
# The one idea: every tool runs twice, natively and under `gdrproxy run`, through the same
# launcher (run_as MODE ...), and a check passes only when both runs behave the same: same exit
# status, same deterministic part of the output (a per-check "signature"), and, for the proxied
# run, a JSON trace that holds the expected decoded calls with results. Every wait is bounded.

repo=${GDRVM_REPO:?GDRVM_REPO not set (run through scripts/rxe-vm.sh)}
build=${GDRVM_BUILD:-$repo/build}
out=${GDRVM_OUT:-/run/vmshare}
gdrproxy=$build/gdrproxy
# shellcheck disable=SC2034 # used by the scripts that source this one (lsm.sh, rdma_netns.sh)
testkit=$build/gdrproxy-testkit  # the tests' tool (stand-in devices, exercisers)
default_policy=$repo/configs/policy/default.json
work=/run/gdrvm
mkdir -p "$work"
summary=$out/summary.txt
passes=0
failures=0
tool_timeout=40

now_ms() { echo $(($(date +%s%N) / 1000000)); }
log() { echo "VMTEST: $*"; }

# record NAME PASS|FAIL MS DETAIL
record() {
  local line
  line=$(printf '%-26s %-4s %6s ms  %s' "$1" "$2" "$3" "$4")
  echo "$line" >>"$summary"
  echo "VMTEST-RESULT: $line"
  if [[ $2 == PASS ]]; then passes=$((passes + 1)); else failures=$((failures + 1)); fi
}

# wait_port DEV STATE: port 1 of DEV reaches STATE (ACTIVE/DOWN) within 10 s.
wait_port() {
  local i
  for ((i = 0; i < 100; i++)); do
    rdma link show "$1/1" 2>/dev/null | grep -q "state $2 " && return 0
    sleep 0.1
  done
  return 1
}

# uverbs_of IBDEV: the uverbs node of an ibdev, from the kernel's class directory.
uverbs_of() {
  local d
  for d in /sys/class/infiniband_verbs/uverbs*; do
    [[ $(cat "$d/ibdev" 2>/dev/null) == "$1" ]] && { basename "$d"; return 0; }
  done
  return 1
}

# Show a file on the console, indented and tagged, at most 40 lines.
show() { sed -n "1,40s/^/    [$2] /p" "$1"; }

# wait_ready SPEC PID: SPEC is tcp:PORT (a TCP listener, perftest and *_pingpong exchange their
# addresses over TCP), cm:PORT (an rdma_cm id in LISTEN state on that port, seen through the
# kernel's resource tracking) or none. Gives up after 30 s or when PID exits.
wait_ready() {
  local spec=$1 pid=$2 i
  for ((i = 0; i < 300; i++)); do
    case $spec in
      tcp:*) [[ -n $(ss -Hltn "sport = :${spec#tcp:}" 2>/dev/null) ]] && return 0 ;;
      cm:*)
        rdma -j resource show cm_id 2>/dev/null |
          jq -e --arg p ":${spec#cm:}" 'any(.[]; .state == "LISTEN" and (.["src-addr"] | endswith($p)))' \
            >/dev/null 2>&1 && return 0
        ;;
      *) return 0 ;;
    esac
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# run_as MODE TAG CMD...: runs CMD natively (MODE=native) or under the proxy with the default
# policy and a JSON trace in $work/TAG.jsonl (MODE=proxied); output in $work/TAG.out.
# PROXY_POLICY and PROXY_TRACE=0 override the policy and drop the trace (for the benchmark).
run_as() {
  local mode=$1 tag=$2
  shift 2
  local -a pre=()
  if [[ $mode == proxied ]]; then
    # -q: the engine's informational notes on stderr are not the tool's output
    # shellcheck disable=SC2206 # PROXY_ARGS: extra run options, split on spaces
    pre=("$gdrproxy" run -q --mode enforce --policy "${PROXY_POLICY:-$default_policy}" ${PROXY_ARGS:-})
    [[ ${PROXY_TRACE:-1} == 1 ]] && pre+=(--trace-json "$work/$tag.jsonl")
    pre+=(--)
    rm -f "$work/$tag.jsonl"
  fi
  local t0 rc
  t0=$(now_ms)
  timeout -k 5 "$tool_timeout" "${pre[@]}" "$@" >"$work/$tag.out" 2>&1
  rc=$?
  echo $(($(now_ms) - t0)) >"$work/$tag.ms"
  return $rc
}

# pair_as MODE NAME READY "SERVER CMD" "CLIENT CMD": a server in the background, the client once
# the server is ready, then the server's own exit (bounded). Sets src and crc.
pair_as() {
  local mode=$1 name=$2 ready=$3 scmd=$4 ccmd=$5 spid i
  # shellcheck disable=SC2086 # commands are word lists
  run_as "$mode" "$name.$mode.server" $scmd &
  spid=$!
  if ! wait_ready "$ready" "$spid"; then
    log "$name ($mode): server not ready ($ready)"
  fi
  # shellcheck disable=SC2086
  run_as "$mode" "$name.$mode.client" $ccmd
  crc=$?
  # A server whose client failed may wait for it forever: give it 2 s then, else 30 s.
  local grace=300
  ((crc == 0)) || grace=20
  for ((i = 0; i < grace; i++)); do
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$spid" 2>/dev/null; then
    log "$name ($mode): server still running, stopping it"
    pkill -TERM -P "$spid"  # the timeout(1) that runs it, which passes the signal on
  fi
  wait "$spid"
  src=$?
}

# signature FILE... : the deterministic part of a tool's output, extracted with $sig (sed -E).
# Lines of gdrproxy's own (its exit statistics when tracing) are not the tool's output.
signature() { cat "$@" 2>/dev/null | tr -d '\r' | grep -v '^gdrproxy: ' | sed -nE "$sig"; }

# trace_problems TRACE EXPECTED...: prints what is wrong with a proxied run's JSON trace, nothing
# when it is right. Each EXPECTED is a call name that must appear as a word of some line's "call"
# field with a result; NAME:WORD also needs WORD in that line's "args" (MODIFY_QP:RTS). Every
# line must carry the contract's fields, and nothing may be denied under the default policy.
# One exception, printed as a line starting "note: ", not a problem: an expected call whose
# every record says its result was not observed, in a run whose own output (TRACE's .out) says
# the kernel skipped the observer's programs. This guest's kernel skips tracing programs now and
# then (a few results per thousand calls, docs/PERFORMANCE.md); the loss must be said, never
# silent, and the call itself must still be there.
trace_problems() {
  local trace=$1 want name word found out=${1%.jsonl}.out
  shift
  [[ -s $trace ]] || { echo "no trace written"; return; }
  jq -e -s 'all(.[]; has("pid") and has("nspid") and has("pidns") and has("device") and has("call")
                 and has("args") and has("result") and has("errno") and has("latency_us")
                 and has("decision"))' "$trace" >/dev/null 2>&1 ||
    echo "lines without the contract's fields"
  jq -e -s 'any(.[]; (.decision | tostring | test("deny"; "i")))' "$trace" >/dev/null 2>&1 &&
    echo "denied: $(jq -r 'select(.decision | tostring | test("deny"; "i")) | .call' "$trace" | sort -u | tr '\n' ' ')"
  for want in "$@"; do
    name=${want%%:*}
    word=
    [[ $want == *:* ]] && word=${want#*:}
    # The records of that call (and word): "result" if one has its result, "unobserved" if one
    # says it was not observed, else "none".
    found=$(jq -r -s --arg n "$name" --arg w "$word" '
      [.[] | select(((.call // "") | test("(^|[^A-Z_])" + $n + "([^A-Z_]|$)"))
                    and ($w == "" or (.args | tostring | test($w))))]
      | if any(.[]; .result != null) then "result"
        elif any(.[]; (.note // "") | test("result not observed")) then "unobserved"
        else "none" end' "$trace" 2>/dev/null)
    [[ $found == result ]] && continue
    if [[ $found == unobserved ]] &&
      grep -qE "traced calls have no result .*skipped the observer's programs [1-9]" "$out" 2>/dev/null; then
      echo "note: $want traced, its result not observed (the kernel skipped the observer; said by the run)"
    else
      echo "no $want${word:+ in args} with a result"
    fi
  done
}

# verdict NAME WANT_RC T0 "EXPECTED CALLS": compares the native and proxied runs whose
# exit statuses are in nat_rc/prx_rc and whose outputs are $work/NAME.{native,proxied}.SIDE.out,
# checks the traces $work/NAME.proxied.*.jsonl (an expected call written client:CALL or
# server:CALL is looked for on that side of a pair only) and records the result.
verdict() {
  local name=$1 want=$2 t0=$3 calls=$4 problems=() notes=() nsig psig f p
  [[ $nat_rc == "$want" ]] || problems+=("native exit $nat_rc, expected $want")
  [[ $prx_rc == "$nat_rc" ]] || problems+=("proxied exit $prx_rc vs native $nat_rc")
  nsig=$(signature "$work/$name".native.*.out)
  psig=$(signature "$work/$name".proxied.*.out)
  [[ -n $nsig ]] || problems+=("native output lacks the signature /$sig/")
  [[ $nsig == "$psig" ]] || problems+=("output differs: native [$(echo $nsig | cut -c1-80)] proxied [$(echo $psig | cut -c1-80)]")
  local side c wants
  for f in "$work/$name".proxied.*.out; do
    # client:CALL / server:CALL apply to that side of a pair only
    side=${f%.out}
    side=${side##*.}
    wants=()
    for c in $calls; do
      case $c in
        client:* | server:*) [[ ${c%%:*} == "$side" ]] && wants+=("${c#*:}") ;;
        *) wants+=("$c") ;;
      esac
    done
    while IFS= read -r p; do
      if [[ $p == note:* ]]; then
        notes+=("$(basename "$f" .out): ${p#note: }")
      elif [[ -n $p ]]; then
        problems+=("$(basename "$f" .out): $p")
      fi
    done < <(trace_problems "${f%.out}.jsonl" "${wants[@]}")
  done
  # wall time of the native and the proxied runs (the longer side of a pair)
  local tn tp
  tn=$(cat "$work/$name".native.*.ms 2>/dev/null | sort -n | tail -1)
  tp=$(cat "$work/$name".proxied.*.ms 2>/dev/null | sort -n | tail -1)
  cp "$work/$name".* "$out/" 2>/dev/null
  if ((${#problems[@]} == 0)); then
    record "$name" PASS $(($(now_ms) - t0)) "exit $nat_rc both; ${tn}/${tp} ms; $(echo $nsig | cut -c1-50)${notes[*]:+; $(IFS='; '; echo "${notes[*]}")}"
  else
    for f in "$work/$name".*.out; do show "$f" "$(basename "$f" .out)"; done
    record "$name" FAIL $(($(now_ms) - t0)) "${tn}/${tp} ms; $(IFS='; '; echo "${problems[*]}")"
  fi
}

# check_pair NAME WANT_RC READY "EXPECTED CALLS" "SERVER CMD" "CLIENT CMD" (signature in $sig)
check_pair() {
  local name=$1 want=$2 ready=$3 calls=$4 scmd=$5 ccmd=$6 t0 src crc
  t0=$(now_ms)
  pair_as native "$name" "$ready" "$scmd" "$ccmd"
  nat_rc="$src/$crc"
  pair_as proxied "$name" "$ready" "$scmd" "$ccmd"
  prx_rc="$src/$crc"
  verdict "$name" "$want/$want" "$t0" "$calls"
}

# check_one NAME WANT_RC "EXPECTED CALLS" CMD... (signature in $sig; $before runs before each run)
check_one() {
  local name=$1 want=$2 calls=$3 t0
  shift 3
  t0=$(now_ms)
  ${before:-:}
  run_as native "$name.native.run" "$@"
  nat_rc=$?
  ${before:-:}
  run_as proxied "$name.proxied.run" "$@"
  prx_rc=$?
  verdict "$name" "$want" "$t0" "$calls"
}
