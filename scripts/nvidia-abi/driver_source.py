"""Reads NVIDIA's open kernel module source at a release tag for generate.py: the files the
generator needs, extracted from a git clone, and the text helpers every parser uses.

The one idea: only the paths listed here are read, and nothing of them is written out.
"""
import io
import os
import re
import subprocess
import tarfile

# What the generator reads at a tag: small enough to extract in a second.
PATHS = [
    "src/nvidia/generated",
    "src/common/sdk/nvidia/inc",
    "src/nvidia/inc/kernel/rmapi/control.h",
    "src/nvidia/src/kernel/rmapi/resource_list.h",
    "src/nvidia/src/kernel/rmapi/resource_desc_flags.h",
    "src/nvidia/arch/nvalloc/unix/include",
    "src/nvidia/arch/nvalloc/unix/src/escape.c",
    "src/nvidia/arch/nvalloc/unix/src/osapi.c",
    "src/nvidia/interface/deprecated/rmapi_deprecated.h",
    "src/nvidia/interface/deprecated/rmapi_deprecated_control.c",
    "kernel-open/common/inc",
    "kernel-open/nvidia/nv.c",
    "kernel-open/nvidia-uvm/uvm_ioctl.h",
    "kernel-open/nvidia-uvm/uvm_linux_ioctl.h",
    "kernel-open/nvidia-uvm/uvm_types.h",
    "kernel-open/nvidia-uvm/uvm_api.h",
    "kernel-open/nvidia-uvm/uvm_linux.c",
]


def extract(git_dir, tag, dest):
    """Extracts PATHS at `tag` into `dest` (paths missing at the tag are skipped)."""
    listed = subprocess.run(
        ["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", tag, "--"] + PATHS,
        check=True, capture_output=True, text=True).stdout.split()
    # Of src/nvidia/generated only the NVOC sources: the rest are firmware images and headers.
    listed = [p for p in listed if not p.startswith("src/nvidia/generated/")
              or p.endswith("_nvoc.c")]
    data = subprocess.run(["git", "--git-dir", git_dir, "archive", "--format=tar", tag, "--"]
                          + sorted(set(listed)), check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def walk_files(root, suffix):
    out = []
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(suffix):
                out.append(os.path.join(d, f))
    return sorted(out)


COMMENT_OR_STRING = re.compile(r'("(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\')|/\*.*?\*/|//[^\n]*',
                               re.S)


def strip_comments(text):
    return COMMENT_OR_STRING.sub(lambda m: m.group(1) or " ", text)
