#!/usr/bin/env bash
# `gdrproxy agent --metrics` end to end, on stand-in device nodes with runtime_client playing the
# runtimes (as agent_test.sh). The idea not to miss: the page a real agent serves is checked
# against the series docs/METRICS.md lists (every one present, of its type: the test fails when a
# documented series is missing) and by `promtool check metrics` (lint-clean); its counts move with
# real calls, a refusal shows with its class and reason, a hostile container id is escaped, and
# scrapers that send nothing or a 1 MiB header are cut off while a container's calls and a real
# scrape are served meanwhile. alert_rules checks deploy/kubernetes/gdrproxy-alerts.yaml with
# promtool (check, unit tests) and that docs/METRICS.md holds the same rules.
# Usage: metrics_test.sh GDRPROXY RUNTIME_CLIENT ATTACK_CLIENT SOURCE_DIR CASE   (root; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
TK=$(dirname "$GP")/gdrproxy-testkit
RC=$(realpath "$2")
A=$(realpath "$3")
SRC=$(realpath "$4")
CASE=$5
DOC=$SRC/docs/METRICS.md
RULES=$SRC/deploy/kubernetes/gdrproxy-alerts.yaml
command -v promtool >/dev/null || { echo "SKIP [$CASE]: no promtool (Debian's prometheus)"; exit 77; }
command -v curl >/dev/null || { echo "SKIP [$CASE]: no curl"; exit 77; }

if [[ $CASE == alert_rules ]]; then
  out=$(promtool check rules "$RULES" 2>&1) || { echo "$out"; echo "FAIL [$CASE]: promtool check rules"; exit 1; }
  out=$(promtool test rules "$SRC/tests/agent/metrics_alerts_test.yaml" 2>&1) ||
    { echo "$out"; echo "FAIL [$CASE]: promtool test rules"; exit 1; }
  # The rules docs/METRICS.md shows are the file's, byte for byte (its last yaml block).
  doc_rules=$(awk '/^```yaml$/ {n++; buf=""; on=1; next} /^```$/ {on=0; last=buf; next} on {buf = buf $0 "\n"} END {printf "%s", last}' "$DOC")
  [[ $doc_rules == "$(cat "$RULES")" ]] ||
    { diff <(echo "$doc_rules") "$RULES"; echo "FAIL [$CASE]: docs/METRICS.md's rules differ from $RULES"; exit 1; }
  for alert in GdrproxyDenialsSpiking GdrproxyListenerLost GdrproxyContainerDegraded GdrproxyAgentRestarting GdrproxyAgentDown; do
    grep -q "alert: $alert$" "$RULES" || { echo "FAIL [$CASE]: no $alert in $RULES"; exit 1; }
  done
  echo "PASS [$CASE]"
  exit 0
fi

[[ $EUID == 0 ]] || { echo "SKIP [$CASE]: needs root"; exit 77; }
if [[ -z ${GDRPROXY_METRICS_TEST_INNER:-} ]]; then
  GDRPROXY_METRICS_TEST_INNER=1 exec timeout -k 5 120 "$TK" standin "$0" "$@"
fi
WORK=$(mktemp -d /tmp/gdrproxy-metrics.XXXXXX)
AGENT_PID=
HOSTILE_PID=
trap '[[ -n $HOSTILE_PID ]] && kill -KILL $HOSTILE_PID 2>/dev/null; [[ -n $AGENT_PID ]] && kill -KILL $AGENT_PID 2>/dev/null; rm -rf "$WORK"' EXIT
fail() {
  echo "FAIL [$CASE]: $*" >&2
  [[ -f $WORK/agent.log ]] && sed 's/^/  [agent] /' "$WORK/agent.log" >&2
  exit 1
}
SOCK=$WORK/run/agent.sock
CTL=$WORK/run/agent.ctl
mkdir -p "$WORK/traces"
cat >"$WORK/agent.json" <<'JSON'
{"version": 1,
 "containers": [{"match": {"id": "team-a-*"}, "grants": ["uverbs0"], "trace": true}]}
JSON
start_agent() {
  "$GP" agent --socket "$SOCK" --ctl-socket "$CTL" --config "$WORK/agent.json" \
    --trace-dir "$WORK/traces" "$@" >"$WORK/agent.log" 2>&1 &
  AGENT_PID=$!
  local i
  for i in $(seq 100); do [[ -S $SOCK && -S $CTL ]] && return 0; sleep 0.05; done
  fail "the agent did not start"
}
bundle_for() {
  local b=$WORK/bundles/$1
  mkdir -p "$b"
  jq -n --arg s "$SOCK" '{ociVersion: "1.2.0", linux: {seccomp: {defaultAction: "SCMP_ACT_ALLOW", listenerPath: $s}}}' >"$b/config.json"
  echo "$b"
}
in_container() {
  local id=$1 style=$2
  shift 2
  "$RC" "$SOCK" "$id" "$style" --bundle "$(bundle_for "$id")" "$@"
}
probe() { echo "$A open /dev/infiniband/$1 rdwr syscall | sed s/^/$1-/"; }
# SCRAPE is set by each case: scrape FILE writes the page there (headers in FILE.head).
scrape() { "${SCRAPE[@]}" -sS --max-time 5 -D "$1.head" -o "$1" "$URL" || fail "scrape failed"; }
# value FILE SERIES: its sample value (series written as on the page, labels included).
value() { awk -v k="$2" '$1 == k {print $2; found=1} END {if (!found) print "none"}' "$1"; }
# lint FILE: promtool takes the page without a word.
lint() {
  local out
  out=$(promtool check metrics <"$1" 2>&1) || { echo "$out"; fail "promtool check metrics rejects $1"; }
  [[ -z $out ]] || { echo "$out"; fail "promtool check metrics lints $1"; }
}
# documented FILE: every series docs/METRICS.md lists is on the page, of its type.
documented() {
  local n=0 name type
  while read -r name type; do
    n=$((n + 1))
    grep -qx "# TYPE $name $type" "$1" || fail "documented series $name ($type) is not on the page"
    grep -q "^# HELP $name " "$1" || fail "$name has no # HELP"
  done < <(sed -nE 's/^\| `(gdrproxy_[a-z_]+)` \| (gauge|counter|histogram) \|.*/\1 \2/p' "$DOC")
  ((n >= 10)) || fail "docs/METRICS.md lists only $n series (its table was not found)"
  grep -q "Content-Type: text/plain; version=0.0.4" "$1.head" || { cat "$1.head"; fail "wrong Content-Type"; }
}
at_least() { [[ $1 =~ ^[0-9]+$ ]] && (($1 >= $2)); }

case_served_calls_counted_on_a_unix_socket() {
  local ms=$WORK/run/metrics.sock
  start_agent --metrics "$ms"
  for i in $(seq 50); do [[ -S $ms ]] && break; sleep 0.05; done
  [[ $(stat -c %a "$ms") == 600 && $(stat -c %u "$ms") == 0 ]] || fail "metrics socket is $(stat -c '%a %u' "$ms")"
  SCRAPE=(curl --unix-socket "$ms")
  URL=http://localhost/metrics
  scrape "$WORK/m0"
  lint "$WORK/m0"
  documented "$WORK/m0"
  [[ $(value "$WORK/m0" 'gdrproxy_judge_state{state="off"}') == 1 ]] || fail "judge state not off"
  [[ $(value "$WORK/m0" gdrproxy_agent_restarts_total) == 0 ]] || fail "a first start counted as a restart"
  local c0
  c0=$(value "$WORK/m0" 'gdrproxy_calls_total{class="uverbs"}')
  # Two containers: one granted uverbs0 (its uverbs1 refused), one whose id is hostile to the
  # format (a quote, a backslash, a newline), granted nothing.
  local hostile=$'evil"\\id\nx-'$$
  in_container team-a-$$ runc-init -- sh -c "$(probe uverbs0); $(probe uverbs1); sleep 2" >"$WORK/a.out" 2>&1 &
  local a=$!
  in_container "$hostile" crun -- sh -c "$(probe uverbs0); sleep 2" >"$WORK/h.out" 2>&1 &
  local h=$!
  for i in $(seq 50); do
    scrape "$WORK/m1"
    [[ $(value "$WORK/m1" 'gdrproxy_containers{mode="enforce"}') == 2 ]] && break
    sleep 0.1
  done
  [[ $(value "$WORK/m1" 'gdrproxy_containers{mode="enforce"}') == 2 ]] || { cat "$WORK/m1"; fail "2 containers not served"; }
  lint "$WORK/m1"
  documented "$WORK/m1"
  grep -qF 'gdrproxy_container_calls_total{container="evil\"\\id\nx-'"$$"'"} ' "$WORK/m1" ||
    { grep container_calls "$WORK/m1"; fail "the hostile id is not escaped on the page"; }
  wait $a || fail "container a exit $?"
  wait $h || fail "hostile container exit $?"
  grep -qE "uverbs0-open.* OK ioctl=E(NOTTY|INVAL)" "$WORK/a.out" || { cat "$WORK/a.out"; fail "uverbs0 not served"; }
  grep -q "uverbs1-open.* ERR EACCES$" "$WORK/a.out" || { cat "$WORK/a.out"; fail "uverbs1 not refused"; }
  for i in $(seq 50); do [[ $(grep -c " ended: " "$WORK/agent.log") == 2 ]] && break; sleep 0.1; done
  scrape "$WORK/m2"
  lint "$WORK/m2"
  documented "$WORK/m2"
  local c2 d2
  c2=$(value "$WORK/m2" 'gdrproxy_calls_total{class="uverbs"}')
  d2=$(value "$WORK/m2" 'gdrproxy_denials_total{class="uverbs",reason="open_refused"}')
  at_least "$c2" $((c0 + 3)) || { cat "$WORK/m2"; fail "uverbs calls went from $c0 to $c2 (3 opens and an ioctl were served)"; }
  at_least "$d2" 2 || { cat "$WORK/m2"; fail "uverbs open refusals: $d2, expected 2"; }
  [[ $(value "$WORK/m2" 'gdrproxy_containers{mode="enforce"}') == 0 ]] || fail "ended containers still counted"
  [[ $(value "$WORK/m2" 'gdrproxy_adoptions_total{outcome="new_container"}') == 2 ]] || fail "adoptions not counted"
  at_least "$(value "$WORK/m2" 'gdrproxy_handler_latency_seconds_count{class="uverbs"}')" 3 || fail "opens not timed"
  at_least "$(value "$WORK/m2" gdrproxy_trace_bytes_total)" 1 || fail "team-a's trace bytes not counted"
  grep -vE '^#| 0$' "$WORK/m2" | grep -E 'uverbs|container_'
  # An ended container's own series ends; its counts stay in the totals.
  ! grep -q "container=\"team-a-$$\"" "$WORK/m2" || fail "an ended container keeps its series"
  # Restarts are counted across the agent's kill (no process of its own outlives it): twice
  # killed, the third agent says 2, and its start time is its own.
  local r
  for r in 1 2; do
    kill -KILL $AGENT_PID
    wait $AGENT_PID 2>/dev/null
    rm -f "$SOCK" "$CTL" "$ms"
    start_agent --metrics "$ms"
    for i in $(seq 50); do [[ -S $ms ]] && break; sleep 0.05; done
  done
  scrape "$WORK/m3"
  lint "$WORK/m3"
  [[ $(value "$WORK/m3" gdrproxy_agent_restarts_total) == 2 ]] || { grep restarts "$WORK/m3"; fail "two restarts not counted"; }
  [[ $(value "$WORK/m3" gdrproxy_agent_start_time_seconds) != "$(value "$WORK/m2" gdrproxy_agent_start_time_seconds)" ]] ||
    fail "the restarted agent's start time is its predecessor's"
}

case_tcp_scrape_survives_hostile_scrapers() {
  local port held
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # A handshake deadline of 4 s: scrapers that send nothing hold their slots that long, so a
  # container served in under 3 s meanwhile was not waiting behind them (a bound with room for a
  # loaded machine; the cut-offs are checked only to have come, long before the clients' 30 s).
  start_agent --metrics "127.0.0.1:$port" --handshake-deadline-ms 4000
  SCRAPE=(curl)
  URL=http://127.0.0.1:$port/metrics
  for i in $(seq 50); do curl -s --max-time 1 -o /dev/null "$URL" && break; sleep 0.05; done
  scrape "$WORK/m0"
  lint "$WORK/m0"
  documented "$WORK/m0"
  local c0
  c0=$(value "$WORK/m0" 'gdrproxy_calls_total{class="uverbs"}')
  [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/other") == 404 ]] || fail "another path not 404"
  # Six scrapers that send nothing (more than the 4 read at once) and one that sends a 1 MiB
  # header; each says how and when it was cut off.
  python3 - "$port" >"$WORK/hostile.out" 2>&1 <<'PY' &
import socket, sys, threading, time
port = int(sys.argv[1])
said = threading.Lock()
def say(line):  # one whole line at a time: the threads' prints would interleave
    with said: print(line, flush=True)
def idle(i):
    s = socket.create_connection(("127.0.0.1", port)); s.settimeout(30); t = time.time()
    try: got = s.recv(100)
    except OSError as e: got = repr(e).encode()
    say(f"idle {i} cut off after {time.time() - t:.1f} s: {got[:20]!r}")
def flood():
    s = socket.create_connection(("127.0.0.1", port)); s.settimeout(30); t = time.time()
    data = b"GET /metrics HTTP/1.1\r\nX-Flood: " + b"a" * (1 << 20); sent = 0
    try:
        while sent < len(data): sent += s.send(data[sent:sent + 65536])
        got = s.recv(100)
    except OSError as e: got = repr(e).encode()
    say(f"flood cut off after {time.time() - t:.1f} s having sent {sent}: {got[:40]!r}")
ts = [threading.Thread(target=idle, args=(i,)) for i in range(6)] + [threading.Thread(target=flood)]
for t in ts: t.start()
for t in ts: t.join()
PY
  HOSTILE_PID=$!
  sleep 0.2
  # Meanwhile a container's calls are served and a real scrape answered, at once.
  local t0=$SECONDS
  timeout 5 "$RC" "$SOCK" team-a-$$ runc-init --bundle "$(bundle_for team-a-$$)" -- sh -c "$(probe uverbs0)" >"$WORK/a.out" 2>&1 ||
    { cat "$WORK/a.out"; fail "the container's calls were not served beside hostile scrapers"; }
  grep -qE "uverbs0-open.* OK ioctl=E(NOTTY|INVAL)" "$WORK/a.out" || { cat "$WORK/a.out"; fail "uverbs0 not served"; }
  scrape "$WORK/m1"
  ((SECONDS - t0 <= 3)) || fail "serving beside hostile scrapers took $((SECONDS - t0)) s"
  wait $HOSTILE_PID
  HOSTILE_PID=
  cat "$WORK/hostile.out"
  # Each idle one closed with nothing sent, never by its own timeout: those past the 4 read at
  # once are dropped as they come, the others held to the deadline; the flood answered 431 (or
  # reset) past 8 KiB. No bound tighter than the deadline: a loaded machine delays every step.
  [[ $(awk "/^idle .* cut off after .* s: b''\$/ && \$6 < 25" "$WORK/hostile.out" | wc -l) == 6 ]] ||
    fail "scrapers sending nothing were not all cut off"
  held=$(awk '/^idle / && $6 >= 3.5' "$WORK/hostile.out" | wc -l)
  ((held >= 1 && held <= 4)) || fail "idle scrapers: $held held to the deadline (1 to 4 expected)"
  grep -qE "^flood cut off after [0-9]+\.[0-9] s .*(431|Error)" "$WORK/hostile.out" ||
    fail "the 1 MiB header was not cut off"
  for i in $(seq 50); do grep -q " ended: " "$WORK/agent.log" && break; sleep 0.1; done
  scrape "$WORK/m2"
  lint "$WORK/m2"
  at_least "$(value "$WORK/m2" 'gdrproxy_calls_total{class="uverbs"}')" $((c0 + 1)) || { cat "$WORK/m2"; fail "its open not counted"; }
  kill -TERM $AGENT_PID
  wait $AGENT_PID
  AGENT_PID=
  ! curl -s --max-time 1 -o /dev/null "$URL" || fail "the port still answers after the agent stopped"
}

"case_$CASE"
echo "PASS [$CASE]"
