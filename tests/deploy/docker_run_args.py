"""The `docker run` arguments that run one container of a DaemonSet in deploy/kubernetes/ as the
kubelet would on a node: host PID (hostPID), privileged (securityContext), each volumeMount from
its volume (hostPath: the path the test maps it to; configMap: a directory holding the
ConfigMap's data as files) with its mountPropagation, then the image and the command. The idea not
to miss: every mount comes from the manifest; a hostPath the caller gives no place for, a volume
kind or a field this does not translate is an error, so a changed manifest changes the test's
container or fails the test, never silently runs something else.
Usage: docker_run_args.py MANIFEST_DIR DAEMONSET CONTAINER CONFIGMAP_DIR HOSTPATH=DIR...
CONTAINER is a container or init container name. Prints the arguments NUL-separated."""
import glob
import os
import sys

import yaml

manifests, daemonset, container, configmap_dir = sys.argv[1:5]
host_paths = dict(a.split("=", 1) for a in sys.argv[5:])
docs = {}
for path in sorted(glob.glob(os.path.join(manifests, "*.yaml"))):
    for d in yaml.safe_load_all(open(path)):
        if d and "kind" in d:  # Kubernetes objects (not, e.g., a Prometheus rules file)
            docs[(d["kind"], d["metadata"]["name"])] = d


def die(msg):
    sys.exit(f"docker_run_args.py: {daemonset}/{container}: {msg}")


pod = docs[("DaemonSet", daemonset)]["spec"]["template"]["spec"]
known_pod = {"hostPID", "containers", "initContainers", "volumes"}
if set(pod) - known_pod:
    die(f"pod fields this does not translate: {sorted(set(pod) - known_pod)}")
found = [c for c in pod.get("initContainers", []) + pod["containers"] if c["name"] == container]
if len(found) != 1:
    die("no such container")
c = found[0]
known_container = {"name", "image", "imagePullPolicy", "securityContext", "command", "args", "volumeMounts",
                   "ports"}
if set(c) - known_container:
    die(f"container fields this does not translate: {sorted(set(c) - known_container)}")
# docker run pulls only an image it does not have: IfNotPresent (the image is the test's build).
if c.get("imagePullPolicy", "IfNotPresent") != "IfNotPresent":
    die(f"imagePullPolicy {c['imagePullPolicy']}: the test runs the image it built, as IfNotPresent does")
args = []
if pod.get("hostPID"):
    args += ["--pid", "host"]
security = c.get("securityContext", {})
if set(security) - {"privileged"}:
    die(f"securityContext fields this does not translate: {sorted(set(security) - {'privileged'})}")
if security.get("privileged"):
    args.append("--privileged")

volumes = {v["name"]: v for v in pod.get("volumes", [])}
propagation = {None: [], "None": [], "HostToContainer": ["rslave"], "Bidirectional": ["rshared"]}
for m in c.get("volumeMounts", []):
    if set(m) - {"name", "mountPath", "mountPropagation", "readOnly"}:
        die(f"volumeMount fields this does not translate: {m}")
    v = volumes.get(m["name"]) or die(f"volumeMount {m['name']} names no volume")
    if "hostPath" in v:
        hp = v["hostPath"]
        source = host_paths.get(hp["path"]) or die(f"the test gives no place for hostPath {hp['path']}")
        if hp.get("type") == "DirectoryOrCreate":
            os.makedirs(source, exist_ok=True)
        elif not os.path.exists(source):
            die(f"hostPath {hp['path']} (here {source}) does not exist")
    elif "configMap" in v:
        name = v["configMap"]["name"]
        cm = docs.get(("ConfigMap", name)) or die(f"no ConfigMap {name} in {manifests}")
        source = os.path.join(configmap_dir, name)
        os.makedirs(source, exist_ok=True)
        for key, text in cm["data"].items():
            with open(os.path.join(source, key), "w") as f:
                f.write(text)
    else:
        die(f"volume {m['name']}: a kind this does not translate: {v}")
    options = (["ro"] if m.get("readOnly") else []) + propagation[m.get("mountPropagation")]
    args += ["-v", f"{source}:{m['mountPath']}" + (":" + ",".join(options) if options else "")]
args.append(c["image"])
args += c.get("command", []) + c.get("args", [])
sys.stdout.write("\0".join(args) + "\0")
