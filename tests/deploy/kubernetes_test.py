"""The Kubernetes deployment files (deploy/kubernetes/) parse, and agree with each other and with
the binaries: the RuntimeClass's handler is containerd's runtime name, its BinaryName is the link
the installer makes, the agent's socket is the runtime config's listener and the agent's default,
the shim's config path is its default, the CDI kind and devices of the example Pod are what
`gdrproxy cdi generate` writes, the ConfigMap's runtime.json and agent.json load in the real
binaries, and the agent's --metrics port is its pod's metrics containerPort and scrape annotation
(served, on a free loopback port here), and the fd store's holder is the pod's first container at
the agent's --fd-store path, the agent told not to start its own. No cluster runs here: this is what can be checked without one.
Usage: kubernetes_test.py GDRPROXY SOURCE_DIR"""
import glob
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

gp, src = sys.argv[1:3]
docs = {}
for path in sorted(glob.glob(os.path.join(src, "deploy/kubernetes/*.yaml"))):
    if path.endswith("/gdrproxy-alerts.yaml"):  # Prometheus rules (tests/agent/metrics_test.sh)
        continue
    for d in yaml.safe_load_all(open(path)):
        assert d.get("apiVersion") and d.get("kind") and d["metadata"].get("name"), (path, d)
        docs[(d["kind"], d["metadata"]["name"])] = d
kinds = sorted({k for k, _ in docs})
assert kinds == ["ConfigMap", "DaemonSet", "Namespace", "Pod", "RuntimeClass"], kinds


def help_default(args, option):
    out = subprocess.run([gp] + args + ["--help"], capture_output=True, text=True).stdout
    m = re.search(re.escape(option) + r" TEXT=(\S+)", out)
    assert m, (args, option)
    return m.group(1)


config = docs[("ConfigMap", "gdrproxy-config")]["data"]
runtime = json.loads(config["runtime.json"])
toml = config["containerd-gdrproxy.toml"]
rc = docs[("RuntimeClass", "gdrproxy")]
handler = re.search(r'runtimes\.([\w-]+)\]', toml).group(1)
assert rc["handler"] == handler, (rc["handler"], handler)
assert 'runtime_type = "io.containerd.runc.v2"' in toml
binary = re.search(r'BinaryName = "([^"]+)"', toml).group(1)
installer = docs[("DaemonSet", "gdrproxy-node-installer")]["spec"]["template"]["spec"]
script = installer["initContainers"][0]["command"][-1]
assert f"ln -sf gdrproxy /host{binary}" in script, script
# The shim reads runtime.json where the installer puts it: its default path.
assert f"/host{os.path.dirname(help_default(['runtime'], '--config'))}/" in script
agent_ds = docs[("DaemonSet", "gdrproxy-agent")]
agent = agent_ds["spec"]["template"]["spec"]
assert agent["hostPID"] is True
containers = {c["name"]: c for c in agent["containers"]}
# The fd store's holder is a container of its own, started first (a runtime kills whatever the
# agent's container leaves, a holder it forked included), at the path the agent names with
# --fd-store-external, through the same /run/gdrproxy mount; the pod is replaced only when
# deleted (an upgrade drops the holder's listeners: a drained node's).
assert [c["name"] for c in agent["containers"]] == ["fd-store", "agent"], agent["containers"]
assert agent_ds["spec"]["updateStrategy"] == {"type": "OnDelete"}, agent_ds["spec"].get("updateStrategy")
cmd = containers["agent"]["command"]
holder = containers["fd-store"]
assert holder["image"] == containers["agent"]["image"], (holder["image"], containers["agent"]["image"])
assert holder["command"][:3] == [cmd[0], "agent", "fd-store"] and len(holder["command"]) == 4, holder["command"]
assert cmd[cmd.index("--fd-store") + 1] == holder["command"][3], (cmd, holder["command"])
assert "--fd-store-external" in cmd, cmd
run_mount = [m for m in containers["agent"]["volumeMounts"] if m["mountPath"] == "/run/gdrproxy"]
assert len(run_mount) == 1 and holder["volumeMounts"] == run_mount, (holder["volumeMounts"], run_mount)
assert os.path.dirname(holder["command"][3]) == "/run/gdrproxy", holder["command"]
sock = cmd[cmd.index("--socket") + 1]
assert sock == runtime["listener"] == help_default(["agent"], "--socket"), sock
mounts = {m["mountPath"] for m in containers["agent"]["volumeMounts"]}
# Metrics: the port --metrics serves on the pod's network is the container's "metrics" port and
# the one the scrape annotations name.
metrics_addr = cmd[cmd.index("--metrics") + 1]
m = re.fullmatch(r"0\.0\.0\.0:(\d+)", metrics_addr)
assert m, metrics_addr
ports = {p["name"]: p for p in containers["agent"]["ports"]}
assert ports["metrics"]["containerPort"] == int(m.group(1)), (ports, metrics_addr)
notes = docs[("DaemonSet", "gdrproxy-agent")]["spec"]["template"]["metadata"]["annotations"]
assert notes["prometheus.io/scrape"] == "true", notes
assert notes["prometheus.io/port"] == m.group(1), (notes, metrics_addr)
assert notes.get("prometheus.io/path", "/metrics") == "/metrics", notes
assert os.path.dirname(sock) in mounts and os.path.dirname(cmd[cmd.index("--config") + 1]) in mounts
# The example Pod: the runtime class, and CDI names of the kind cdi generate writes.
pod = docs[("Pod", "gdrproxy-example")]
assert pod["spec"]["runtimeClassName"] == rc["metadata"]["name"]
spec = json.loads(subprocess.run([gp, "cdi", "generate", "--no-driver-files"], capture_output=True,
                                 text=True, check=True).stdout)
for name in pod["metadata"]["annotations"]["cdi.k8s.io/gdrproxy"].split(","):
    kind, dev = name.split("=")
    assert kind == spec["kind"], (kind, spec["kind"])
    assert re.fullmatch(r"gpu\d+|mlx5_\d+|all", dev), dev
assert "cdi generate --output /etc/cdi/gdrproxy.json" in script
# The configs load in the real binaries: the shim's (any verb reads it; runc answers --version)
# and the agent's (it starts serving).
with tempfile.TemporaryDirectory() as t:
    for name in ("runtime.json", "agent.json"):
        open(os.path.join(t, name), "w").write(config[name])
    r = subprocess.run([gp, "runtime", "--config", os.path.join(t, "runtime.json"), "--", "--version"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # The agent's metrics on a free loopback port (the pod's address is host-wide here).
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    a = subprocess.Popen([gp, "agent", "--socket", os.path.join(t, "a.sock"), "--ctl-socket",
                          os.path.join(t, "a.ctl"), "--config", os.path.join(t, "agent.json"),
                          "--metrics", f"127.0.0.1:{port}"],
                         stderr=subprocess.PIPE, text=True)
    for _ in range(100):
        if os.path.exists(os.path.join(t, "a.sock")) or a.poll() is not None:
            break
        time.sleep(0.05)
    started = os.path.exists(os.path.join(t, "a.sock"))
    page = ""
    if started:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{notes.get('prometheus.io/path', '/metrics')}",
                                    timeout=5) as r:
            page = r.read().decode()
    a.kill()
    err = a.communicate()[1]
    assert started, err
    assert "# TYPE gdrproxy_calls_total counter" in page, page
print(f"PASS: {len(docs)} Kubernetes objects parse and agree with each other and the binaries")
