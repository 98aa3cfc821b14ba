#!/usr/bin/env python3
"""Runs every gdrproxy example the README, the docs pages and the `--help` texts print, and
checks each one.

The examples are extracted, never copied: every line of a ```sh block of README.md or of
docs/*.md that runs gdrproxy (after `&&`, continuation lines joined, comments dropped), and every
"Example:" line of every subcommand's --help, found by walking the subcommand tree. An example this test has no
environment for fails the test, so a new example cannot go unchecked.

Environments (all private, nothing of the host is changed):
  engine  `gdrproxy run ...` and `gdrproxy trace ...`, under stand-in device nodes
          (`gdrproxy-testkit standin`). A run example must behave exactly like its command run natively
          under the same stand-ins: same exit status, same standard output.
  node    `gdrproxy sysfs ...`, `gdrproxy netns ...` and `gdrproxy harness ...`, in a private
          mount and network namespace that looks like an HGX node with 16 RoCE rails: the
          constructed sysfs fixture (tests/fixtures/sysfs, variant roce16) mounted over /sys,
          tmpfs over /run and /var/lib,
          a veth pair named rdma0/rdma1 with addresses from 198.51.100.0/24, and a process in its
          own network namespace standing for the container (its pid replaces 4242).
          `<rootfs>` becomes a temporary directory.
  agent   `gdrproxy agent ...` in a private mount namespace with tmpfs over /run: the serving
          example starts and listens on its sockets, each `agent ctl` example answers (exit 0)
          while it serves, and SIGTERM stops it with exit status 0.
  oci     `gdrproxy oci ...`, under stand-in device nodes. seccomp: exit status 0 and a profile
          that carries the example's listener and metadata and notifies ioctls (or, with --pfc,
          pseudo filter code with a NOTIFY action on ioctl). prepare: the bundle path becomes a
          fresh bundle with a minimal config.json, which must come out with the example's grants
          in listenerMetadata and their nodes in linux.devices.
  runtime `gdrproxy runtime ... -- ARGS`: a verb the shim passes through behaves exactly like
          the runtime run with ARGS directly (exit status and standard output).
  hook    `gdrproxy hook poststop --id ID` for a container that never had rails moved, and
          `gdrproxy hook sweep`, with a private --state-dir: exit status 0 (nothing to give back).
  cdi     `gdrproxy cdi generate ...` with its --output in a temporary directory: exit status 0
          and a JSON spec of kind gdrproxy.dev/device with an "all" device.
  demo    `gdrproxy demo`: exit status 0.
  completion `gdrproxy completion SHELL [> FILE]`: exit status 0, and the script (written to a
          temporary file) loaded into bash registers gdrproxy's completion.

usage: examples_test.py GDRPROXY SOURCE_DIR
"""
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

GP = os.path.realpath(sys.argv[1]) if len(sys.argv) > 1 else ""
# The tests' tool (stand-in device nodes), built beside the binary.
TK = os.path.join(os.path.dirname(GP), "gdrproxy-testkit")
SRC = os.path.realpath(sys.argv[2]) if len(sys.argv) > 2 else ""
failures = []
ROOTFS = "@ROOTFS@"  # what a documented <rootfs> placeholder becomes until an environment sets it


def fail(example, why):
    failures.append(f"{example}\n    {why}")
    print(f"FAIL: {example}\n    {why}", flush=True)


def ok(example, what):
    print(f"ok: {example}  ({what})", flush=True)


# ---- extraction ----------------------------------------------------------------------------

def gdrproxy_words(segment):
    """The segment as words if it runs gdrproxy, else None."""
    try:
        words = shlex.split(segment)
    except ValueError:
        return None
    if words and os.path.basename(words[0]) == "gdrproxy":
        return words
    return None


def markdown_examples(path):
    where = os.path.relpath(path, SRC)
    out, block, pending = [], None, ""
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("```"):
            block = None if block is not None else line[3:].strip()
            continue
        if block != "sh":
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        line = line.replace("<rootfs>", ROOTFS)  # a placeholder, not a redirection
        # Drop a trailing comment (shlex knows quoting), keep redirections.
        lex = shlex.shlex(line, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        lex.commenting = True
        try:
            tokens = list(lex)
        except ValueError:
            continue
        text = " ".join(shlex.quote(t) if t not in (">", "&&", "|") else t for t in tokens)
        for seg in text.split(" && "):
            if gdrproxy_words(seg):
                out.append((where, seg.strip()))
    return out


def subcommands(help_text):
    names, inside = [], False
    for line in help_text.splitlines():
        if line.strip().lower() == "subcommands:":
            inside = True
            continue
        if inside:
            m = re.match(r"^  (\S+)\s", line + " ")
            if not m:
                if line.strip():
                    continue
                inside = False
                continue
            names.append(m.group(1))
    return names


def help_examples():
    out, todo, seen = [], [[]], set()
    while todo:
        path = todo.pop(0)
        r = subprocess.run([GP, *path, "--help"], capture_output=True, text=True, timeout=20)
        if r.returncode != 0:
            fail(f"gdrproxy {' '.join(path)} --help", f"exit {r.returncode}: {r.stderr.strip()}")
            continue
        for line in r.stdout.splitlines():
            m = re.match(r"^\s*Example:\s*(.*gdrproxy .*)$", line)
            if m:
                out.append((f"gdrproxy {' '.join(path)} --help".replace("  ", " "), m.group(1)))
        for name in subcommands(r.stdout):
            if tuple(path + [name]) not in seen:
                seen.add(tuple(path + [name]))
                todo.append(path + [name])
    return out


def environment(words):
    sub = words[1:3]
    if sub[:1] in (["run"], ["trace"]):
        return "engine"
    if sub[:1] in (["sysfs"], ["netns"], ["harness"]):
        return "node"
    if sub == ["demo"]:
        return "demo"
    if sub[:1] == ["agent"]:
        return "agent"
    if sub in (["oci", "seccomp"], ["oci", "prepare"]):
        return "oci"
    if sub[:1] == ["runtime"]:
        return "runtime"
    if sub in (["hook", "poststop"], ["hook", "sweep"]):
        return "hook"
    if sub == ["cdi", "generate"]:
        return "cdi"
    if sub[:1] == ["completion"]:
        return "completion"
    return None


def run_oci(examples, work):
    """Runs inside gdrproxy-testkit standin (a private mount namespace): the host's sysfs is a
    constructed HGX node's, where the stand-in uverbs0 is mlx5_0, so that prepare's synthetic
    /sys can be built."""
    fixture = os.path.join(work, "hgx")
    sh(f"{shlex.quote(SRC)}/tests/sysfs/prepare_fixture.sh hgx-roce16 {shlex.quote(fixture)}")
    sh(f"mount --bind {fixture}/sys /sys")
    for where, ex in examples:
        check_oci(where, ex, work)


def check_oci(where, ex, work):
    words = gdrproxy_words(ex)
    label = f"[{where}] {ex}"
    if words[1:3] == ["oci", "prepare"]:
        bundle = tempfile.mkdtemp(dir=work)
        with open(os.path.join(bundle, "config.json"), "w") as f:
            json.dump({"ociVersion": "1.0.2", "linux": {}}, f)
        words = words[:3] + [bundle] + words[4:]
        r = subprocess.run([GP] + words[1:], cwd=work, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            return fail(label, f"exit {r.returncode}: {r.stderr[-300:]}")
        config = json.load(open(os.path.join(bundle, "config.json")))
        grants = words[words.index("--grant") + 1].split(",") if "--grant" in words else []
        meta = config["linux"]["seccomp"].get("listenerMetadata", "")
        paths = [d["path"] for d in config["linux"].get("devices", [])]
        if f"gdrproxy-grants={','.join(grants)}" not in meta.split("\n"):
            return fail(label, f"listenerMetadata is {meta!r}")
        if len(paths) != len(grants):
            return fail(label, f"device nodes {paths} for grants {grants}")
        sys_mounts = [m for m in config.get("mounts", []) if m["destination"] == "/sys"]
        if "--no-sysfs" not in words and (
                len(sys_mounts) != 1 or sys_mounts[0]["source"] != bundle + "/gdrproxy-sys"):
            return fail(label, f"/sys is not the bundle's synthetic tree: {sys_mounts}")
        return ok(label, f"bundle prepared: {', '.join(paths)}, /sys from its tree")
    r = subprocess.run([GP] + words[1:], cwd=work, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return fail(label, f"exit {r.returncode}: {r.stderr[-300:]}")
    if "--pfc" in words:
        part = r.stdout[r.stdout.find('filter for syscall "ioctl"'):]
        if 'filter for syscall "ioctl"' not in r.stdout or "action 0x7fc00000" not in part:
            return fail(label, "no NOTIFY action on ioctl in the pseudo filter code")
        return ok(label, "pseudo filter code notifies ioctls")
    try:
        profile = json.loads(r.stdout)
    except ValueError as e:
        return fail(label, f"not JSON: {e}")
    want = {"--listener": "listenerPath", "--metadata": "listenerMetadata"}
    for flag, key in want.items():
        if flag in words and profile.get(key) != words[words.index(flag) + 1]:
            return fail(label, f"{key} is {profile.get(key)!r}")
    if not any(e.get("action") == "SCMP_ACT_NOTIFY" and "ioctl" in e.get("names", [])
               for e in profile.get("syscalls", [])):
        return fail(label, "no notify rule for ioctl")
    ok(label, "profile with its listener, metadata and ioctl notify rules")


# ---- the engine environment (runs inside `gdrproxy-testkit standin`) --------------------------------

def run_engine(examples, work):
    """Runs inside gdrproxy-testkit standin: each run example natively and under gdrproxy."""
    for where, ex in examples:
        words = gdrproxy_words(ex)
        argv = [GP] + words[1:]
        label = f"[{where}] {ex}"
        if words[1] == "run":
            if "--" not in words:
                fail(label, "a run example must give its command after --")
                continue
            cmd = words[words.index("--") + 1:]
            native = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=120)
            proxied = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=120)
            if proxied.returncode != native.returncode:
                fail(label, f"exit {proxied.returncode}, natively {native.returncode}; "
                            f"stderr: {proxied.stderr.strip()[-300:]}")
            elif proxied.stdout != native.stdout:
                fail(label, f"output differs from the native run:\n{proxied.stdout[:300]}\n"
                            f"--- native:\n{native.stdout[:300]}")
            elif "--trace-json" in words:
                trace = os.path.join(work, words[words.index("--trace-json") + 1])
                try:
                    records = [json.loads(l) for l in open(trace)]
                except (OSError, ValueError) as e:
                    fail(label, f"trace {trace}: {e}")
                    continue
                ok(label, f"exit {native.returncode} as native, {len(records)} trace records")
            else:
                ok(label, f"exit {native.returncode} and output as native")
        elif words[1:3] == ["trace", "summarize"]:
            r = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=60)
            if r.returncode != 0 or not re.search(r"^uverbs|^device|calls?", r.stdout, re.M):
                fail(label, f"exit {r.returncode}: {r.stdout[:300]} {r.stderr[:300]}")
            else:
                ok(label, "summary printed")
        else:
            fail(label, "no check for this engine example")


# ---- the node environment (runs inside private mount + network namespaces) -----------------

NODE_EXPECT = [  # (subcommand words, exit status, regex on stdout+stderr)
    (["sysfs", "snapshot"], 0, r"\d+ PCI functions"),
    (["sysfs", "build"], 0, r"2 GPUs, 2 RDMA devices"),
    (["sysfs", "verify"], 0, r""),
    (["sysfs", "mount-plan"], 0, r""),
    (["sysfs", "mount"], 0, r""),
    (["sysfs", "affinity"], 0, r"0000:0f:00\.0 mlx5_0 PIX"),
    (["netns", "select"], 0, r"NCCL_IB_HCA==mlx5_0:1,mlx5_1:1|\"rails\": \["),
    (["netns", "move"], 0, r"moved 2 interface\(s\) into pid"),
    (["netns", "restore"], 0, r"rdma0: moved back"),
    # The harness's verbs on the same node, in the order --help lists them (state on the tmpfs
    # /run): the plan of rdma0/rdma1, then status, teardown, attach (preparing again), detach.
    (["harness", "status"], 0, r"identity: node "),
    (["harness", "prepare"], 0, r"RDMA_PEER_IFACES=rdma0,rdma1"),
    (["harness", "teardown"], 0, r"torn down"),
    (["harness", "attach"], 0, r"netns=/run/gdr-harness/\S+/run/netns"),
    (["harness", "detach"], 0, r"giving the rails back"),
    # run: rails moved, CMD under `gdrproxy run` with the fixture's uverbs nodes, which this
    # namespace has no device for (so gdrproxy run refuses, 125), rails given back.
    (["harness", "run"], 125, r"run --grant uverbs0,uverbs1,rdma_cm(.|\n)*rdma1: moved back"),
]


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=True, check=True, capture_output=True, text=True, **kw)


def run_node(examples, work):
    fixture = os.path.join(work, "hgx")
    sh(f"{shlex.quote(SRC)}/tests/sysfs/prepare_fixture.sh hgx-roce16 {shlex.quote(fixture)}")
    sh(f"mount --bind {fixture}/sys /sys")
    for d in ("/run", "/var/lib"):
        sh(f"mount -t tmpfs gdrproxy-examples {d}")
    os.makedirs("/run/gdrproxy")
    os.makedirs("/var/lib/gdrproxy")
    rootfs = os.path.join(work, "rootfs")
    os.makedirs(rootfs + "/sys")
    sh("ip link set lo up && ip link add rdma0 type veth peer name rdma1 && "
       "ip addr add 198.51.100.10/24 dev rdma0 && ip addr add 198.51.100.11/24 dev rdma1 && "
       "ip link set rdma0 up && ip link set rdma1 up")
    container = subprocess.Popen(["unshare", "--net", "sleep", "600"])
    try:
        for _ in range(100):  # until the stand-in container has its own network namespace
            if os.readlink(f"/proc/{container.pid}/ns/net") != os.readlink("/proc/self/ns/net"):
                break
            subprocess.run(["sleep", "0.05"])
        for where, ex in examples:
            words = gdrproxy_words(ex)
            label = f"[{where}] {ex}"
            expect = next((e for e in NODE_EXPECT if words[1:1 + len(e[0])] == e[0]), None)
            if not expect:
                fail(label, "no check for this example: add it to NODE_EXPECT")
                continue
            line = ex.replace(ROOTFS, rootfs)
            line = re.sub(r"(--pid )4242\b", rf"\g<1>{container.pid}", line)
            line = re.sub(r"^\S*gdrproxy ", shlex.quote(GP) + " ", line)
            r = subprocess.run(["bash", "-c", line], cwd=work, capture_output=True, text=True,
                               timeout=120)
            text = r.stdout + r.stderr
            if r.returncode != expect[1] or not re.search(expect[2], text):
                fail(label, f"exit {r.returncode} (expected {expect[1]}), output:\n{text[-600:]}")
                continue
            if words[1:3] == ["netns", "move"]:
                inside = sh(f"nsenter -t {container.pid} -n ip -br addr").stdout
                if "198.51.100.10/24" not in inside:
                    fail(label, f"rdma0's address is not in the container:\n{inside}")
                    continue
            if words[1:3] == ["netns", "restore"]:
                host = sh("ip -br addr").stdout
                if "198.51.100.10/24" not in host or "198.51.100.11/24" not in host:
                    fail(label, f"rails not back with their addresses:\n{host}")
                    continue
            if words[1:3] == ["sysfs", "mount"] and "--at" in words:
                if not os.path.isdir(os.path.join(rootfs, "sys", "bus", "pci", "devices")):
                    fail(label, "the tree is not mounted at the rootfs's /sys")
                    continue
            ok(label, f"exit {r.returncode}")
    finally:
        container.kill()
        container.wait()


# ---- driver -------------------------------------------------------------------------------

# ---- the agent environment (runs inside a private mount namespace) --------------------------

def run_agent(examples, work):
    """Starts each serving example, checks the ctl examples against it, stops it with SIGTERM."""
    import signal
    import time
    sh("mount -t tmpfs tmpfs /run")
    os.makedirs("/run/gdrproxy/traces")
    servers = [(w, e) for w, e in examples if "ctl" not in gdrproxy_words(e)]
    ctls = [(w, e) for w, e in examples if "ctl" in gdrproxy_words(e)]
    if not servers:
        for where, ex in ctls:
            fail(f"[{where}] {ex}", "no serving agent example to ask")
        return
    for where, ex in servers:
        label = f"[{where}] {ex}"
        words = gdrproxy_words(ex)
        # `agent fd-store PATH` is a holder, not an agent: it serves PATH, and no ctl answers it.
        holder = words[1:3] == ["agent", "fd-store"]
        serving = [words[-1]] if holder else ["/run/gdrproxy/agent.sock", "/run/gdrproxy/agent.ctl"]
        proc = subprocess.Popen([GP] + words[1:], cwd=work, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        for _ in range(100):
            if all(os.path.exists(p) for p in serving):
                break
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        if proc.poll() is not None:
            fail(label, f"exited {proc.returncode}: {proc.stdout.read()[-300:]}")
            continue
        for cwhere, cex in ([] if holder else ctls):
            r = subprocess.run([GP] + gdrproxy_words(cex)[1:], cwd=work, capture_output=True,
                               text=True, timeout=30)
            if r.returncode != 0:
                fail(f"[{cwhere}] {cex}", f"exit {r.returncode}: {r.stderr[-300:]}")
            else:
                ok(f"[{cwhere}] {cex}", "answered")
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            fail(label, "did not stop on SIGTERM")
            continue
        if rc != 0:
            fail(label, f"exit {rc} on SIGTERM: {proc.stdout.read()[-300:]}")
        elif holder and os.path.exists(serving[0]):
            fail(label, f"stopped on SIGTERM but left its socket {serving[0]}")
        elif holder:
            ok(label, "held its socket, stopped on SIGTERM, socket removed")
        else:
            ok(label, "served, answered, stopped on SIGTERM")


def main():
    if len(sys.argv) == 5 and sys.argv[3] in ("--engine", "--node", "--agent", "--oci"):
        examples = json.loads(os.environ["GDRPROXY_EXAMPLES"])
        work = sys.argv[4]
        {"--engine": run_engine, "--node": run_node, "--agent": run_agent,
         "--oci": run_oci}[sys.argv[3]](examples, work)
        sys.exit(1 if failures else 0)

    examples, texts = [], set()
    pages = [os.path.join(SRC, "README.md")] + sorted(glob.glob(os.path.join(SRC, "docs", "*.md")))
    documented = [e for page in pages for e in markdown_examples(page)]
    for where, ex in documented + help_examples():
        # A parent's --help repeats its subcommands' descriptions: check each example once.
        if ex not in texts:
            texts.add(ex)
            examples.append((where, ex))
    if not examples:
        sys.exit("no examples found: the extraction is broken")
    groups = {"engine": [], "node": [], "agent": [], "oci": [], "runtime": [], "hook": [],
              "cdi": [], "demo": [], "completion": []}
    for where, ex in examples:
        env = environment(gdrproxy_words(ex))
        if env is None:
            fail(f"[{where}] {ex}", "no environment in this test runs this example")
        else:
            groups[env].append((where, ex))
    print(f"{len(examples)} examples: " + ", ".join(f"{len(v)} {k}" for k, v in groups.items()))

    work = tempfile.mkdtemp(prefix="gdrproxy-examples-")
    try:
        # Relative paths in the examples (configs/..., build/gdrproxy) resolve as in a checkout.
        os.symlink(os.path.join(SRC, "configs"), os.path.join(work, "configs"))
        os.makedirs(os.path.join(work, "build"))
        os.symlink(GP, os.path.join(work, "build", "gdrproxy"))
        me = os.path.realpath(__file__)
        for env, cmd in (("engine", [TK, "standin", sys.executable, me, GP, SRC, "--engine"]),
                         ("node", ["unshare", "--mount", "--net", "--propagation", "private",
                                   sys.executable, me, GP, SRC, "--node"]),
                         ("agent", ["unshare", "--mount", "--propagation", "private",
                                    sys.executable, me, GP, SRC, "--agent"]),
                         ("oci", [TK, "standin", sys.executable, me, GP, SRC, "--oci"])):
            if groups[env]:
                r = subprocess.run(cmd + [work], env=dict(os.environ, GDRPROXY_EXAMPLES=json.dumps(
                    groups[env])), timeout=900)
                if r.returncode != 0:
                    failures.append(f"{env} examples failed (above)")
        for where, ex in groups["runtime"]:
            words = gdrproxy_words(ex)
            rt = words[words.index("--runtime") + 1] if "--runtime" in words else "runc"
            direct = [rt] + words[words.index("--") + 1:]
            native = subprocess.run(direct, cwd=work, capture_output=True, text=True, timeout=60)
            shim = subprocess.run([GP] + words[1:], cwd=work, capture_output=True, text=True,
                                  timeout=60)
            if (shim.returncode, shim.stdout) != (native.returncode, native.stdout):
                fail(f"[{where}] {ex}", f"exit {shim.returncode} vs {native.returncode} directly; "
                                        f"{shim.stdout[:200]!r} vs {native.stdout[:200]!r}")
            else:
                ok(f"[{where}] {ex}", f"exit {native.returncode} and output as {rt} directly")
        for where, ex in groups["hook"]:
            words = gdrproxy_words(ex) + ["--state-dir", os.path.join(work, "hookstate")]
            r = subprocess.run([GP] + words[1:], cwd=work, capture_output=True, text=True,
                               timeout=60)
            if r.returncode != 0:
                fail(f"[{where}] {ex}", f"exit {r.returncode}: {r.stderr[-300:]}")
            else:
                ok(f"[{where}] {ex}", "exit 0, nothing to give back")
        for where, ex in groups["cdi"]:
            words = gdrproxy_words(ex)
            out = os.path.join(work, "cdi.json")
            if "--output" in words:
                words[words.index("--output") + 1] = out
            else:
                words += ["--output", out]
            r = subprocess.run([GP] + words[1:], cwd=work, capture_output=True, text=True,
                               timeout=60)
            try:
                spec = json.load(open(out)) if r.returncode == 0 else {}
            except (OSError, ValueError):
                spec = {}
            if spec.get("kind") != "gdrproxy.dev/device" or not any(
                    d.get("name") == "all" for d in spec.get("devices", [])):
                fail(f"[{where}] {ex}", f"exit {r.returncode}: {r.stderr[-300:]}")
            else:
                ok(f"[{where}] {ex}", f"spec with {len(spec['devices'])} device(s)")
        for where, ex in groups["completion"]:
            words = gdrproxy_words(ex)
            words = words[:words.index(">")] if ">" in words else words
            out = os.path.join(work, "completion.sh")
            with open(out, "w") as f:
                r = subprocess.run([GP] + words[1:], cwd=work, stdout=f, stderr=subprocess.PIPE,
                                   text=True, timeout=60)
            reg = subprocess.run(["bash", "--norc", "--noprofile", "-c",
                                  '. "$1" && complete -p gdrproxy', "_", out],
                                 capture_output=True, text=True, timeout=60)
            if r.returncode != 0 or reg.stdout.strip() != "complete -F _gdrproxy gdrproxy":
                fail(f"[{where}] {ex}", f"exit {r.returncode}: {r.stderr[-300:]}{reg.stderr[-300:]}")
            else:
                ok(f"[{where}] {ex}", "exit 0, the script registers the completion")
        for where, ex in groups["demo"]:
            r = subprocess.run([GP, "demo"], cwd=work, capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                fail(f"[{where}] {ex}", f"exit {r.returncode}: {(r.stdout + r.stderr)[-600:]}")
            else:
                ok(f"[{where}] {ex}", "exit 0")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"\n{len(failures)} example check(s) failed")
        sys.exit(1)
    print(f"all {len(examples)} examples behave as documented")


if __name__ == "__main__":
    main()
