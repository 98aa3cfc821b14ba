#!/usr/bin/python3
"""A small CRI client for the CRI tests: the calls a kubelet makes to containerd's CRI plugin,
one subcommand each, configs given as protobuf JSON files as crictl reads them.

The idea not to miss: the messages come from tests/cri/cri.proto compiled by protoc at test time
(--pb-dir, a directory of the test's own), and each call is a plain gRPC unary call on the
method's full name, so the client needs only Debian's python3-grpcio and python3-protobuf, no
generated service stubs. Every call has a deadline (--timeout). Errors print the gRPC status and
exit 1; `exec` exits with the command's own exit code.

Usage: cri_client.py --socket SOCK --pb-dir DIR COMMAND ...   (see --help)
"""
import argparse
import json
import os
import subprocess
import sys
import time

PROTO_DIR = os.path.dirname(os.path.abspath(__file__))


def load_messages(pb_dir):
    """Compile cri.proto into pb_dir (once) and import it."""
    target = os.path.join(pb_dir, "cri_pb2.py")
    if not os.path.exists(target):
        os.makedirs(pb_dir, exist_ok=True)
        subprocess.run(["protoc", f"--python_out={pb_dir}", f"-I{PROTO_DIR}", "cri.proto"], check=True)
    sys.path.insert(0, pb_dir)
    import cri_pb2  # pylint: disable=import-outside-toplevel
    return cri_pb2


class Cri:
    """One channel to the runtime; call(SERVICE, METHOD, request) -> response message."""

    def __init__(self, socket, pb, timeout):
        import grpc  # pylint: disable=import-outside-toplevel
        self.grpc = grpc
        self.pb = pb
        self.timeout = timeout
        self.channel = grpc.insecure_channel(f"unix://{os.path.abspath(socket)}")

    def call(self, service, method, request):
        response_type = getattr(self.pb, method + "Response")
        stub = self.channel.unary_unary(f"/runtime.v1.{service}/{method}",
                                        request_serializer=lambda m: m.SerializeToString(),
                                        response_deserializer=response_type.FromString)
        return stub(request, timeout=self.timeout)

    def runtime(self, method, **fields):
        return self.call("RuntimeService", method, getattr(self.pb, method + "Request")(**fields))

    def image(self, method, **fields):
        return self.call("ImageService", method, getattr(self.pb, method + "Request")(**fields))


def from_json_file(path, message_type):
    from google.protobuf import json_format  # pylint: disable=import-outside-toplevel
    with open(path, encoding="utf-8") as f:
        return json_format.Parse(f.read(), message_type())


def to_json(message):
    from google.protobuf import json_format  # pylint: disable=import-outside-toplevel
    return json_format.MessageToJson(message, preserving_proto_field_name=False, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--socket", required=True, help="the runtime's CRI (gRPC) socket")
    p.add_argument("--pb-dir", required=True, help="where cri.proto is compiled to (the test's own)")
    p.add_argument("--timeout", type=float, default=60.0, help="each call's deadline, seconds")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("version", help="Version: the runtime's name and versions, as JSON")
    s = sub.add_parser("runp", help="RunPodSandbox: prints the pod's id")
    s.add_argument("pod_json")
    s.add_argument("--handler", default="", help="the runtime handler (a RuntimeClass's)")
    s = sub.add_parser("create", help="CreateContainer: prints the container's id")
    s.add_argument("pod_id")
    s.add_argument("container_json")
    s.add_argument("pod_json")
    for name, what in (("start", "StartContainer"), ("rm", "RemoveContainer"),
                       ("status", "ContainerStatus (JSON)"), ("stopp", "StopPodSandbox"),
                       ("rmp", "RemovePodSandbox"), ("inspectp", "PodSandboxStatus (JSON)")):
        sub.add_parser(name, help=what).add_argument("id")
    s = sub.add_parser("stop", help="StopContainer")
    s.add_argument("id")
    s.add_argument("--grace", type=int, default=5, help="seconds before SIGKILL")
    s = sub.add_parser("exec", help="ExecSync: the command's stdout, stderr and exit code")
    s.add_argument("id")
    s.add_argument("--exec-timeout", type=int, default=30)
    s.add_argument("argv", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    s = sub.add_parser("ps", help="ListContainers (JSON), of one pod with --pod")
    s.add_argument("--pod", default="")
    s = sub.add_parser("startpod", help="RunPodSandbox + CreateContainer + StartContainer, then "
                       "wait for a line from READY (a FIFO the container writes): ids and the "
                       "microseconds of each step, as JSON (this client's own start not counted)")
    s.add_argument("pod_json")
    s.add_argument("container_json")
    s.add_argument("--handler", default="")
    s.add_argument("--ready", required=True)
    sub.add_parser("images", help="ListImages (JSON)")
    sub.add_parser("inspecti", help="ImageStatus (JSON)").add_argument("image")
    a = p.parse_args()

    pb = load_messages(a.pb_dir)
    cri = Cri(a.socket, pb, a.timeout)
    try:
        if a.cmd == "version":
            print(to_json(cri.runtime("Version", version="v1")))
        elif a.cmd == "runp":
            config = from_json_file(a.pod_json, pb.PodSandboxConfig)
            print(cri.runtime("RunPodSandbox", config=config, runtime_handler=a.handler).pod_sandbox_id)
        elif a.cmd == "create":
            r = cri.runtime("CreateContainer", pod_sandbox_id=a.pod_id,
                            config=from_json_file(a.container_json, pb.ContainerConfig),
                            sandbox_config=from_json_file(a.pod_json, pb.PodSandboxConfig))
            print(r.container_id)
        elif a.cmd == "start":
            cri.runtime("StartContainer", container_id=a.id)
        elif a.cmd == "stop":
            cri.runtime("StopContainer", container_id=a.id, timeout=a.grace)
        elif a.cmd == "rm":
            cri.runtime("RemoveContainer", container_id=a.id)
        elif a.cmd == "status":
            print(to_json(cri.runtime("ContainerStatus", container_id=a.id).status))
        elif a.cmd == "stopp":
            cri.runtime("StopPodSandbox", pod_sandbox_id=a.id)
        elif a.cmd == "rmp":
            cri.runtime("RemovePodSandbox", pod_sandbox_id=a.id)
        elif a.cmd == "inspectp":
            print(to_json(cri.runtime("PodSandboxStatus", pod_sandbox_id=a.id).status))
        elif a.cmd == "exec":
            argv = a.argv[1:] if a.argv[:1] == ["--"] else a.argv
            if not argv:
                p.error("exec: no command")
            r = cri.runtime("ExecSync", container_id=a.id, cmd=argv, timeout=a.exec_timeout)
            sys.stdout.buffer.write(r.stdout)
            sys.stderr.buffer.write(r.stderr)
            return r.exit_code
        elif a.cmd == "ps":
            f = pb.ContainerFilter(pod_sandbox_id=a.pod)
            print(to_json(cri.runtime("ListContainers", filter=f)))
        elif a.cmd == "startpod":
            pod_config = from_json_file(a.pod_json, pb.PodSandboxConfig)
            ctr_config = from_json_file(a.container_json, pb.ContainerConfig)
            cri.runtime("Version", version="v1")  # the channel connected before the clock starts
            t = [time.monotonic_ns()]
            pod = cri.runtime("RunPodSandbox", config=pod_config, runtime_handler=a.handler).pod_sandbox_id
            t.append(time.monotonic_ns())
            ctr = cri.runtime("CreateContainer", pod_sandbox_id=pod, config=ctr_config,
                              sandbox_config=pod_config).container_id
            t.append(time.monotonic_ns())
            cri.runtime("StartContainer", container_id=ctr)
            t.append(time.monotonic_ns())
            with open(a.ready, encoding="utf-8") as ready:
                line = ready.readline().strip()
            t.append(time.monotonic_ns())
            steps = ("runp_us", "create_us", "start_us", "ready_us")
            print(json.dumps({"pod": pod, "container": ctr, "ready": line,
                              "total_us": (t[-1] - t[0]) // 1000,
                              **{k: (t[i + 1] - t[i]) // 1000 for i, k in enumerate(steps)}}))
        elif a.cmd == "images":
            print(to_json(cri.image("ListImages")))
        elif a.cmd == "inspecti":
            print(to_json(cri.image("ImageStatus", image=pb.ImageSpec(image=a.image))))
    except cri.grpc.RpcError as e:
        # The runtime's message may carry what a tenant wrote (names, commands): shown escaped.
        detail = (e.details() or "").encode("unicode_escape").decode("ascii")
        print(f"cri_client {a.cmd}: {e.code().name}: {detail}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
