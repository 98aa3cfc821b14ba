#!/usr/bin/env bash
# Attacks on the supervisor itself, as a hostile tenant would make them: bytes it controls (its
# process names, the paths it opens), the fds it holds, the command line it is given, the policy
# values an operator could get wrong. Each case names the root cause of issue "close the sandbox
# boundary" it closes and the layer that stops it. Devices are stand-ins (gdrproxy-testkit standin).
# Usage: engine_attacks.sh GDRPROXY DEVICE_CLIENT CASE
set -uo pipefail
GP=$(realpath "$1")
TK=$(dirname "$GP")/gdrproxy-testkit  # the tests' tool: stand-in devices, exercisers
CLIENT=$(realpath "$2")
CASE=$3
SRC=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d /tmp/gdrproxy-attack.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

fail() { echo "FAIL [$CASE]: $*" >&2; exit 1; }
expect_in() { grep -qF -- "$2" "$1" || { echo "--- $1:"; cat "$1"; fail "expected '$2' in $1"; }; }
expect_not_in() { ! grep -qF -- "$2" "$1" || { cat "$1"; fail "did not expect '$2' in $1"; }; }
sandboxed() { timeout -k 5 60 "$TK" standin "$GP" run "$@"; }
# A Python program run inside the sandbox: sets its own process name from bytes, then opens
# uverbs0 and issues one ioctl (ALLOC_PD through INVOKE_WRITE's number is enough to trap).
hostile_comm_py='
import ctypes, fcntl, os, sys
libc = ctypes.CDLL(None, use_errno=True)
name = bytes.fromhex(sys.argv[1])
libc.prctl(15, ctypes.c_char_p(name), 0, 0, 0)   # PR_SET_NAME
fd = os.open("/dev/infiniband/uverbs0", os.O_RDWR)
try:
    fcntl.ioctl(fd, 0xc0181b01, bytearray(24))
except OSError:
    pass
print("done")
'

# Root cause 7: tenant bytes in names and paths. Not UTF-8, a newline, an escape sequence and
# the empty name: the supervisor keeps serving, each text record stays one escaped line, the JSON
# trace stays valid, and the command's exit status comes back.
case_hostile_process_names() {
  local name
  for name in fffe0a58 0a5b706964203120 1b5b324a41 ""; do  # \xff\xfe\nX, "\n[pid 1 ", ESC[2JA, empty
    sandboxed --grant uverbs0 --trace --trace-json "$WORK/t.jsonl" -- \
      python3 -c "$hostile_comm_py" "$name" >"$WORK/out" 2>"$WORK/err"
    local rc=$?
    [[ $rc == 0 ]] || { cat "$WORK/err"; fail "comm hex '$name': exit $rc (supervisor died?)"; }
    expect_in "$WORK/out" "done"
    python3 - "$WORK/t.jsonl" <<'PY' || fail "comm hex '$name': bad JSON trace"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
assert any(r["syscall"] == "ioctl" and r["device"] == "uverbs0" for r in recs), recs
PY
    # Every text record is one line of printable ASCII.
    if LC_ALL=C grep -n '[^[:print:]]' "$WORK/err" >/dev/null; then
      cat -A "$WORK/err"; fail "comm hex '$name': unescaped bytes on stderr"
    fi
    [[ $(grep -c '^\[pid ' "$WORK/err") == $(grep -c 'uverbs0 \(ioctl\|openat\)' "$WORK/err") ]] ||
      { cat -A "$WORK/err"; fail "comm hex '$name': a record spans lines"; }
  done
}

# Root cause 7: a path with a newline (and bytes that are not UTF-8) cannot forge a denial line.
case_hostile_paths() {
  local link=$WORK/$'x\n[pid 1 ns 1 pidns 1 forged] uverbs0 \xff'
  sandboxed --grant uverbs0 --trace-json "$WORK/t.jsonl" -- sh -c 'ln -s /dev/infiniband/uverbs1 "$1" && exec "$2" open "$1" rdwr' sh "$link" "$CLIENT" >"$WORK/out" 2>"$WORK/err"
  expect_in "$WORK/out" "ERR EACCES"
  [[ $(grep -c 'denied open of' "$WORK/err") == 1 ]] || { cat -A "$WORK/err"; fail "no single denial line"; }
  expect_in "$WORK/err" 'x\n[pid 1 ns 1 pidns 1 forged] uverbs0 \xff'
  ! grep -q '^\[pid 1 ns 1 pidns 1 forged\]' "$WORK/err" || fail "a forged line was printed"
  python3 -c "import json,sys; [json.loads(l) for l in open(sys.argv[1])]" "$WORK/t.jsonl" || fail "trace not valid JSON"
}

# Root cause 7: the reader of --trace going away must not kill the supervisor (SIGPIPE), which
# would leave the sandbox unsupervised or dead.
case_trace_reader_goes_away() {
  local rc
  timeout -k 5 60 "$TK" standin bash -c "'$GP' run --grant uverbs0 --trace -- sh -c 'for i in \$(seq 30); do $CLIENT ioctl /dev/infiniband/uverbs0 >/dev/null; done; exit 5' 2>&1 >/dev/null | head -1 >/dev/null; exit \${PIPESTATUS[0]}"
  rc=$?
  [[ $rc == 5 ]] || fail "gdrproxy exited $rc after its trace reader left (expected the command's 5)"
}

# Root cause 9: the trace file and every other supervisor fd are close-on-exec: the sandbox
# cannot forge or erase trace lines through an inherited fd.
case_supervisor_fds_not_inherited() {
  sandboxed --grant uverbs0 --trace-json "$WORK/t.jsonl" -- ls -l /proc/self/fd/ >"$WORK/out" 2>&1 || fail "exit $?"
  expect_not_in "$WORK/out" "t.jsonl"
  expect_not_in "$WORK/out" "seccomp"
  expect_not_in "$WORK/out" "socket:"
  expect_not_in "$WORK/out" "anon_inode:bpf"
}

# Root cause 3: an fd of an ungranted device obtained around the broker (here inherited from
# outside the sandbox) is refused at every ioctl, with or without a trace, and whether the device
# comes from a trap copy made in the caller's context or from gdrproxy's own lookup: the device
# behind the fd is checked against the grants, not guessed from the request number.
case_ungranted_fd_ioctl_refused() {
  local copies=("--trap-copy off")
  if "$GP" run -q --trap-copy on -- true 2>/dev/null; then
    copies+=("--trap-copy on --stats")
  else
    echo "note: this kernel refuses the trap-copy program: checked with gdrproxy's lookups only" >&2
  fi
  for trace in "" "--trace"; do
   for tc in "${copies[@]}"; do
    timeout -k 5 60 "$TK" standin sh -c "exec 7<>/dev/infiniband/uverbs1; exec '$GP' run --grant uverbs0 $trace $tc -- python3 -c '
import fcntl, errno
try:
    fcntl.ioctl(7, 0xc0181b01, bytearray(24)); print(\"ran\")
except OSError as e:
    print(errno.errorcode[e.errno])'" >"$WORK/out" 2>"$WORK/err"
    expect_in "$WORK/out" "EACCES"
    expect_in "$WORK/err" "denied IOCTL_0xc0181b01 on /dev/infiniband/uverbs1"
    expect_in "$WORK/err" "device uverbs1 is not granted"
    # With copies, the refusal was judged from the copy (the device it names is uverbs1's).
    [[ $tc != *stats* ]] || expect_in "$WORK/err" "trap copies: 1 of 1 trapped ioctl(s)"
   done
  done
  # The granted device's fd passes the grant check and reaches the policy (which refuses this
  # all-zero header as malformed: EINVAL, not the grant's EACCES).
  for tc in "${copies[@]}"; do
    timeout -k 5 60 "$TK" standin sh -c "exec 7<>/dev/infiniband/uverbs0; exec '$GP' run --grant uverbs0 $tc -- python3 -c '
import fcntl, errno
try:
    fcntl.ioctl(7, 0xc0181b01, bytearray(24)); print(\"ran\")
except OSError as e:
    print(errno.errorcode[e.errno])'" >"$WORK/out2" 2>&1
    expect_in "$WORK/out2" "EINVAL"
    expect_not_in "$WORK/out2" "not granted"
  done
}

# Root cause 6: the command's own arguments never set gdrproxy's options, whatever precedes --.
case_command_arguments_are_not_options() {
  sandboxed -q --grant uverbs0 -- "$CLIENT" open /dev/infiniband/uverbs1 rdwr --grant uverbs1 --mode trace >"$WORK/out" 2>&1
  expect_in "$WORK/out" "ERR EACCES"
  sandboxed -q --grant uverbs0 -- sh -c '"$0" open /dev/infiniband/uverbs1 rdwr' "$CLIENT" --grant uverbs1 --policy /dev/null >"$WORK/out2" 2>&1
  expect_in "$WORK/out2" "ERR EACCES"
}

# Root cause 10: policy values that would fail open are refused at load, and an empty grant list
# grants nothing.
case_fail_open_policy_values() {
  local bad
  for bad in '{"classes":{"uverbs":{"errno":0}}}' '{"open_errno":-1}' '{"open_errno":5000}' \
             '{"classes":{"uverbs":{"rules":[{"action":"deny","call":"*","errno":0}]}}}' \
             '{"grants":"uverbs0"}' '{"classes":{"uverbs":{"defualt":"deny"}}}'; do
    echo "$bad" >"$WORK/p.json"
    timeout -k 5 20 "$GP" run --policy "$WORK/p.json" -- touch "$WORK/ran" 2>"$WORK/err"
    [[ $? == 125 && ! -e $WORK/ran ]] || fail "policy $bad was accepted"
    expect_in "$WORK/err" "policy $WORK/p.json: "
  done
  echo '{"version":1,"grants":[]}' >"$WORK/p.json"
  sandboxed -q --policy "$WORK/p.json" -- "$CLIENT" open /dev/infiniband/uverbs0 rdwr >"$WORK/out" 2>&1
  expect_in "$WORK/out" "ERR EACCES"
  sandboxed -q --grant none -- "$CLIENT" open /dev/infiniband/uverbs0 rdwr >"$WORK/out2" 2>&1
  expect_in "$WORK/out2" "ERR EACCES"
}

# Root cause 10: in enforce mode a call the ABI tables do not name is denied by default, with a
# line naming it. (uverbs object 0xf0f0 does not exist.)
case_unknown_calls_denied_by_default() {
  sandboxed --grant uverbs0 -- python3 -c '
import fcntl, os, struct, errno
fd = os.open("/dev/infiniband/uverbs0", os.O_RDWR)
# struct ib_uverbs_ioctl_hdr: length, object_id, method_id, num_attrs, reserved1, driver_id, reserved2
hdr = bytearray(struct.pack("=HHHHQII", 24, 0xf0f0, 1, 0, 0, 0, 0))
try:
    fcntl.ioctl(fd, 0xc0181b01, hdr); print("ran")
except OSError as e:
    print(errno.errorcode[e.errno])' >"$WORK/out" 2>"$WORK/err"
  expect_in "$WORK/out" "EPERM"
  expect_in "$WORK/err" "unknown call"
}

# Root cause 2: the broker fails closed. Paths through the caller's magic links (an fd of the
# device directory, its cwd, its root), opened with access mode 3 (no read, no write: ioctls
# only), name the ungranted device: the broker resolves them and refuses; the granted device is
# still reachable the same way. A path the broker cannot read is answered EFAULT, never
# continued (the kernel would read it again, maybe after another thread made it readable).
case_broker_fails_closed() {
  cat >"$WORK/magic.py" <<'PY'
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def attempt(label, path, flags=os.O_RDWR):
    fd = libc.open(path.encode(), flags)
    print(label, "OK" if fd >= 0 else errno.errorcode[ctypes.get_errno()])
dev = sys.argv[1]
d = os.open("/dev/infiniband", os.O_RDONLY | os.O_DIRECTORY)
attempt("fd-dir", f"/proc/self/fd/{d}/{dev}")
os.chdir("/dev/infiniband")
attempt("cwd", f"/proc/self/cwd/{dev}")
attempt("root", f"/proc/self/root/dev/infiniband/{dev}")
attempt("thread-self", f"/proc/thread-self/cwd/{dev}")
# A path in a page nobody may read.
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
noread = libc.mmap(None, 4096, 0, 0x22, -1, 0)  # PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS
fd = libc.open(ctypes.c_void_p(noread), os.O_RDWR)
print("unreadable", "OK" if fd >= 0 else errno.errorcode[ctypes.get_errno()])
PY
  sandboxed --grant uverbs0 -- python3 "$WORK/magic.py" uverbs1 >"$WORK/out" 2>"$WORK/err"
  for how in fd-dir cwd root thread-self; do expect_in "$WORK/out" "$how EACCES"; done
  expect_in "$WORK/out" "unreadable EFAULT"
  expect_in "$WORK/err" "device uverbs1 is not granted"
  expect_in "$WORK/err" "path unreadable"
  sandboxed --grant uverbs0 -q -- python3 "$WORK/magic.py" uverbs0 >"$WORK/out2" 2>"$WORK/err2"
  for how in fd-dir cwd root thread-self; do expect_in "$WORK/out2" "$how OK"; done
  # Ordinary files reached the same ways still open (failing closed is for what the broker
  # cannot decide, not for what it can).
  (cd "$WORK" && sandboxed -q --grant uverbs0 -- sh -c 'echo one >/proc/self/cwd/new1 && echo two >>/proc/thread-self/fd/1 && echo three >>/dev/stdout') >"$WORK/out3" 2>&1 || { cat "$WORK/out3"; fail "ordinary magic-link opens refused"; }
  expect_in "$WORK/out3" "two"
  expect_in "$WORK/out3" "three"
  [[ $(cat "$WORK/new1") == one ]] || fail "/proc/self/cwd/new1 not written"
}

# Root cause 4: a verb the policy denies, sent in its legacy write() encoding, cannot be trapped
# without trapping every write (the data path's included). It is decoded and judged like its
# ioctl encodings: gdrproxy says at start that such rules are not enforced for write(), and
# reports each such write in the trace and once per process on stderr. Its ioctl encoding is
# denied. (The stand-in uverbs0 is /dev/zero: it accepts the write.)
case_uverbs_write_encoding_reported() {
  cat >"$WORK/w.py" <<'PY'
import os, struct, sys, time
fd = os.open("/dev/infiniband/uverbs0", os.O_RDWR)
# struct ib_uverbs_cmd_hdr {command=REG_MR(9), in_words, out_words} + struct ib_uverbs_reg_mr
body = struct.pack("=QQQQII", 0, 0x7f0000001000, 4096, 0x7f0000001000, 2, 1)
hdr = struct.pack("=IHH", 9, (8 + len(body)) // 4, 6)
print("write", os.write(fd, hdr + body), flush=True)
if len(sys.argv) > 1:
    # Gone, or its number reused for another file, before the observer's event is read (drained
    # every few ms): still named uverbs0, the device written to.
    if sys.argv[1] == "reuse":
        os.dup2(os.open("/dev/null", os.O_WRONLY), fd)
    else:
        os.close(fd)
    time.sleep(0.3)
PY
  sandboxed --grant uverbs0 --policy "$SRC/configs/policy/deny-reg-mr.json" --trace-json "$WORK/t.jsonl" -- python3 "$WORK/w.py" >"$WORK/out" 2>"$WORK/err"
  expect_in "$WORK/out" "write 48"
  expect_in "$WORK/err" "never trapped"
  expect_in "$WORK/err" "not enforceable: pid"
  expect_in "$WORK/err" "sent WRITE(REG_MR) to uverbs0 as write()"
  python3 - "$WORK/t.jsonl" <<'PY' || fail "write(REG_MR) not in the trace"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
w = [r for r in recs if r["syscall"] == "write" and r["call"] == "WRITE(REG_MR)"]
assert len(w) == 1, recs
assert w[0]["decision"].startswith("observed (policy would deny"), w[0]
assert w[0]["args"]["length"] == "4096", w[0]
PY
  # The write read after its fd was closed, or its number reused for /dev/null (a tenant hiding
  # the write), is named by the device it was written to.
  for how in close reuse; do
    sandboxed --grant uverbs0 --policy "$SRC/configs/policy/deny-reg-mr.json" --trace-json "$WORK/t-$how.jsonl" -- python3 "$WORK/w.py" $how >"$WORK/out" 2>"$WORK/err"
    expect_in "$WORK/out" "write 48"
    expect_in "$WORK/err" "sent WRITE(REG_MR) to uverbs0 as write()"
  done
}

"case_$CASE"
echo "PASS [$CASE]"
