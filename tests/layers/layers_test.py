#!/usr/bin/env python3
# The layers of ARCHITECTURE.md's picture, checked: every #include of the shipped code runs to its
# own unit or down (to a unit its unit may use, directly or through others), every gdrproxy
# library links only libraries below it and nothing built for the tests, and no source compiled
# into a library includes a header whose code another library holds unless that library is below.
# A new directory of code fails here until it is given a place in UNITS. Tests (tests/) may use
# anything and are not checked.
#
# Usage: layers_test.py SOURCE_DIR BUILD_DIR   (BUILD_DIR holds compile_commands.json)
import json
import os
import re
import subprocess
import sys

# Each unit (a directory; the longest matching prefix names a file's unit) and the units it may
# include directly. What those may use, it may use too; nothing may reach back up.
UNITS = {
    "base": [],
    "sysfs": ["base"],
    "netns": ["base"],
    "proxy/abi": ["base"],
    "proxy/mem": ["base"],
    "proxy/gpudirect": ["base"],
    "proxy/decode": ["proxy/abi", "proxy/mem"],
    "proxy/devices": ["proxy/decode"],
    "proxy/policy": ["proxy/decode", "proxy/gpudirect"],
    "proxy/trace": ["proxy/decode"],
    "proxy/observe": ["proxy/decode"],
    "proxy/broker": ["proxy/devices"],
    "proxy/sandbox": ["proxy/observe", "proxy/policy", "proxy/devices"],
    "proxy/engine": ["proxy/broker", "proxy/sandbox", "proxy/trace"],
    "proxy/oci": ["proxy/engine", "netns", "sysfs"],  # engine: what a session would let run untrapped
    "proxy/run": ["proxy/engine"],
    "proxy/agent": ["proxy/engine", "proxy/oci"],
    "proxy": ["proxy/run", "proxy/agent"],  # proxy/cli.cc: the proxy's commands
    "doctor": ["netns", "sysfs", "proxy/abi"],  # proxy/abi: which NVIDIA tables judge the node
    "harness": ["netns", "sysfs"],
    "harness/slurm": [],  # the SPANK plugin (C): runs the binary, links nothing of ours
    "demo": ["proxy"],
    "cli": ["demo", "harness", "doctor"],
}

# The libraries, and the ones each may link directly (the same rule as the units').
LIBRARIES = {
    "gdrproxy_base": [],
    "gdrproxy_decode": ["gdrproxy_base"],
    "gdrproxy_sysfs": ["gdrproxy_base"],
    "gdrproxy_netns": ["gdrproxy_base"],
    "gdrproxy_proxy": ["gdrproxy_decode", "gdrproxy_netns", "gdrproxy_sysfs"],
    "gdrproxy_harness": ["gdrproxy_netns", "gdrproxy_sysfs"],
    "gdrproxy_doctor": ["gdrproxy_netns", "gdrproxy_sysfs", "gdrproxy_decode"],
    "gdrproxy_example_snapshot": [],
    "gdrproxy_demo": ["gdrproxy_proxy", "gdrproxy_example_snapshot"],
    "gdrproxy": ["gdrproxy_demo", "gdrproxy_harness", "gdrproxy_doctor"],
    "gdr_spank": [],
    "gdr-loopback-relay": [],
}

SOURCE_EXT = (".c", ".cc", ".h", ".cc.in")


def closure(graph):
    """Every node's set of nodes reachable from it; fails on a cycle (a layer order has none)."""
    done, out = set(), {}

    def visit(n, path):
        if n in path:
            raise SystemExit("layers_test: the allowed graph has a cycle: " + " -> ".join(path + [n]))
        if n in done:
            return out[n]
        reach = set()
        for m in graph.get(n, []):
            if m not in graph:
                raise SystemExit(f"layers_test: {n} names {m}, which is not in the table")
            reach |= {m} | visit(m, path + [n])
        done.add(n)
        out[n] = reach
        return reach

    for n in graph:
        visit(n, [])
    return out


UNIT_REACH = closure(UNITS)
LIB_REACH = closure(LIBRARIES)


def unit_of(path):
    d = os.path.dirname(path)
    while d:
        if d in UNITS:
            return d
        d = os.path.dirname(d)
    return None


def include_problem(src, inc):
    """Why `src` may not include `inc` (repository paths), or None."""
    a, b = unit_of(src), unit_of(inc)
    if a is None:
        return f"{src}: its directory is in no layer (give it a place in tests/layers/layers_test.py)"
    if b is None:
        return f"{src} includes {inc}, which is in no layer"
    if a == b or b in UNIT_REACH[a]:
        return None
    up = " (upward: " + b + " uses " + a + ")" if a in UNIT_REACH[b] else ""
    return f"{src} includes {inc}: {a}/ may not use {b}/{up}"


def self_check():
    # The rule must catch the imports this table was written to forbid.
    bad = [("proxy/abi/device_drivers.h", "proxy/decode/decoded_call.h"),
           ("proxy/oci/hook_command.cc", "proxy/agent/agent.h"),
           ("proxy/broker/open_broker.cc", "proxy/engine/session.h"),
           ("sysfs/cli.cc", "proxy/trace/trace_record.h"),
           ("proxy/agent/agent.cc", "tests/engine/call_handler_fakes.h")]
    for s, i in bad:
        if include_problem(s, i) is None:
            raise SystemExit(f"layers_test: self-check: {s} -> {i} was not caught")
    if include_problem("proxy/agent/agent.cc", "proxy/oci/hook_command.h") is not None:
        raise SystemExit("layers_test: self-check: agent/ -> oci/ was refused")


def tracked_sources(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard"],
                         check=True, capture_output=True, text=True).stdout.split("\n")
    return [f for f in out if f.endswith(SOURCE_EXT) and not f.startswith("tests/")
            and os.path.exists(os.path.join(root, f))]


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def includes_of(root, src):
    with open(os.path.join(root, src), errors="replace") as f:
        text = f.read()
    for inc in INCLUDE.findall(text):
        # As the compiler looks: beside the file first, then from the repository root.
        beside = os.path.normpath(os.path.join(os.path.dirname(src), inc))
        if os.path.exists(os.path.join(root, beside)):
            yield beside
        elif os.path.exists(os.path.join(root, inc)):
            yield os.path.normpath(inc)
        # else: generated in the build (vmlinux.h, embedded data), no unit of the tree


def link_edges(root):
    """(file, target, linked) for every target_link_libraries of the shipped code."""
    edges = []
    for d, _, files in os.walk(root):
        rel = os.path.relpath(d, root)
        if rel.startswith(("tests", "build", ".git")) or "CMakeLists.txt" not in files:
            continue
        with open(os.path.join(d, "CMakeLists.txt")) as f:
            text = re.sub(r"#.*", "", f.read())
        for target, args in re.findall(r"target_link_libraries\(\s*(\S+)(.*?)\)", text, re.S):
            for word in args.split():
                if word.startswith("gdrproxy") or word.startswith("gdr_") or word.startswith("gdr-"):
                    edges.append((os.path.join(rel, "CMakeLists.txt"), target, word))
    return edges


def main():
    root, build = sys.argv[1], sys.argv[2]
    self_check()
    problems = []
    sources = tracked_sources(root)
    for src in sources:
        for inc in includes_of(root, src):
            if p := include_problem(src, inc):
                problems.append(p)

    for cmake, target, lib in link_edges(root):
        if target not in LIBRARIES:
            problems.append(f"{cmake}: {target} is in no layer (give it a place in LIBRARIES)")
        elif lib not in LIBRARIES:
            problems.append(f"{cmake}: {target} links {lib}, which is no library of the product "
                            "(test code?)")
        elif lib not in LIB_REACH[target]:
            problems.append(f"{cmake}: {target} may not link {lib}")

    # Which library compiles each shipped source (from the objects' paths), and so which library
    # a header's code is in: a header X.h whose X.cc some library compiles.
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = json.load(f)
    library_of = {}
    for c in commands:
        src = os.path.relpath(c["file"], root)
        m = re.search(r"-o \S*?CMakeFiles/([^/ ]+)\.dir/", c["command"])
        if m and not src.startswith(("tests/", "..")) and m.group(1) in LIBRARIES:
            library_of[src] = m.group(1)
    for src, lib in library_of.items():
        if not os.path.exists(os.path.join(root, src)):
            continue
        # Every header the source reads, through the headers it includes.
        seen, todo = set(), [src]
        while todo:
            for inc in includes_of(root, todo.pop()):
                if inc not in seen:
                    seen.add(inc)
                    todo.append(inc)
        for inc in sorted(seen):
            other = library_of.get(re.sub(r"\.h$", ".cc", inc))
            if other and other != lib and other not in LIB_REACH[lib]:
                problems.append(f"{src} (in {lib}) reads {inc}, whose code is in {other}")

    for p in sorted(set(problems)):
        print(p)
    print(f"layers_test: {len(sources)} files, {len(library_of)} compiled into libraries: "
          f"{len(set(problems))} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
