#!/usr/bin/env python3
"""Generates the NVIDIA driver ABI tables of proxy/abi/generated/ from NVIDIA's open kernel
module source (github.com/NVIDIA/open-gpu-kernel-modules) at its release tags.

The one idea: every number, name, size and flag comes from the driver's own source at the tag
(the NVOC method tables, the SDK headers, resource_list.h, the escape and UVM headers); sizes
are what the host C compiler's sizeof says for the driver's own structs on this architecture.
Only those facts are written out; no source text is. Output is sorted and depends only on the
tags, so a second run reproduces it byte for byte.

Usage: generate.py --git-dir DIR [--out DIR] [--releases FILE] [--add-tag TAG ...]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

from clang_probe import STATUS_NAMES, layouts_of, sizes_of, status_offset
from driver_source import extract, read, strip_comments, walk_files


def version_key(v):
    return tuple(int(p) for p in v.split("."))


# ---- RM controls: the NVOC exported method tables ----

METHOD_TABLE = re.compile(r"__nvoc_exported_method_def_(\w+)\[\]\s*=\s*\{(.*?)\n\};", re.S)
METHOD_ENTRY = re.compile(
    r"/\*flags=\*/\s*(0x[0-9a-fA-F]+)u?,\s*/\*accessRight=\*/\s*(0x[0-9a-fA-F]+)u?,\s*"
    r"/\*methodId=\*/\s*(0x[0-9a-fA-F]+)u?,\s*/\*paramSize=\*/\s*([^\n]*?),\s*\n"
    r".*?/\*func=\*/\s*\"(\w+)\"", re.S)


def parse_methods(src):
    """[(nvoc_class, method_id, flags, access_right, param_type or None, func)]."""
    out = []
    for path in walk_files(os.path.join(src, "src/nvidia/generated"), "_nvoc.c"):
        for m in METHOD_TABLE.finditer(read(path)):
            cls, body = m.group(1), m.group(2)
            for e in METHOD_ENTRY.finditer(body):
                flags, access, mid, psize, func = e.groups()
                t = re.match(r"sizeof\((\w+)\)", psize.strip())
                if t:
                    ptype = t.group(1)
                elif psize.strip().startswith("0"):
                    ptype = ""  # no parameters
                else:
                    ptype = None
                out.append((cls, int(mid, 16), int(flags, 16), int(access, 16), ptype, func))
    return out


def split_args(text):
    """A macro's arguments: split at the commas outside parentheses (RS_LIST(classId(A),
    classId(B)) is one argument)."""
    args, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    args.append(cur.strip())
    return args


def parse_deprecated(src, ctrl_values):
    """{cmd: (name, target cmd)} of the driver's deprecated-control table
    (rmapi_deprecated_control.c): commands the driver converts to a newer control (the _V2 or
    _V3 of the same name) before dispatching that one."""
    path = os.path.join(src, "src/nvidia/interface/deprecated/rmapi_deprecated_control.c")
    if not os.path.exists(path):
        return {}
    out = {}
    for m in re.finditer(r"\{\s*(NV\w+_CTRL_CMD_\w+)\s*,\s*V(\d)_CONVERTER\(_(\w+)\)",
                         strip_comments(read(path))):
        name, ver = m.group(1), m.group(2)
        target = "%s_V%s" % (name, ver)
        if name in ctrl_values and target in ctrl_values:
            out[ctrl_values[name]] = (name, ctrl_values[target])
    return out


def parse_gss_masks(src):
    """{mask: name} of the RM_GSS_LEGACY_MASK* bits (rmapi_deprecated.h): a command with the
    legacy bit set is forwarded as is to the GPU's firmware (GSP); with the privileged bits too,
    only for an administrator."""
    path = os.path.join(src, "src/nvidia/interface/deprecated/rmapi_deprecated.h")
    if not os.path.exists(path):
        return {}
    out = {}
    for m in re.finditer(r"^#define\s+RM_GSS_LEGACY_MASK(_PRIVILEGED)?\s+(0x[0-9a-fA-F]+)",
                         read(path), re.M):
        out[int(m.group(2), 16)] = "GSS_LEGACY" + (m.group(1) or "")
    return out


def parse_defines(paths, pattern):
    """{name: value} of `#define NAME (0x...)` lines matching `pattern` (a name regex)."""
    rx = re.compile(r"^#define\s+(" + pattern + r")\s+\(?\s*(0x[0-9a-fA-F]+|\d+)[uU]?\s*\)?",
                    re.M)
    out = {}
    for p in paths:
        for m in rx.finditer(read(p)):
            out.setdefault(m.group(1), int(m.group(2), 0))
    return out


def norm(s):
    return re.sub(r"[^a-z0-9]", "", s.lower())


def pick_control_name(names, func):
    """The header name for a method id: the one whose words match the handler's, else the
    first in sorted order (several names can share one number)."""
    if not names:
        return None
    f = norm(re.sub(r"^[a-z0-9]+CtrlCmd", "", func))
    best = sorted(names, key=lambda n: ("_CTRL_CMD_" not in n,
                                        norm(n.split("_CTRL_CMD_", 1)[-1]) != f, len(n), n))
    return best[0]


def flag_bits(text, prefix):
    """[(bit value, short name)] of single-bit `#define PREFIXNAME value|NVBIT(n)` lines."""
    out = {}
    for m in re.finditer(r"^#define\s+" + prefix + r"(\w+)\s+(0x[0-9a-fA-F]+|\d+|NVBIT\((\d+)\))",
                         text, re.M):
        name, val, bit = m.group(1), m.group(2), m.group(3)
        v = (1 << int(bit)) if bit is not None else int(val, 0)
        if v and v & (v - 1) == 0 and v not in out:
            out[v] = name
    return sorted(out.items())


# ---- escapes: the parameter types each handler checks its argument's size against ----

ESC_SOURCES = ["src/nvidia/arch/nvalloc/unix/src/escape.c",
               "src/nvidia/arch/nvalloc/unix/src/osapi.c",
               "kernel-open/nvidia/nv.c"]
# `size != sizeof(T)`, `size < sizeof(*p)` (and the mirrored forms): the argument is one T;
# `size / sizeof(T)`, `size % sizeof(T)`: it is an array of T.
SIZE_VAR = r"\b\w*[Ss]ize\b"
SIZE_CMP = re.compile(SIZE_VAR + r"\s*(?:!=|==|<=|<|>=|>)\s*sizeof\s*\(([^()]*)\)|"
                      r"sizeof\s*\(([^()]*)\)\s*(?:!=|==|<=|<|>=|>)\s*" + SIZE_VAR)
SIZE_ELEM = re.compile(SIZE_VAR + r"\s*[/%]\s*sizeof\s*\(([^()]*)\)")
# The validation tables of newer releases: _NV_IOCTL_ENTRY(NV_ESC_X, type[, is array]).
IOCTL_ENTRY = re.compile(r"\b_\w*IOCTL_ENTRY\s*\(\s*NV_ESC_(\w+)\s*,\s*(\w+)\s*"
                         r"(?:,\s*(NV_TRUE|NV_FALSE)\s*)?\)")


def block_at(text, i):
    """The text from index `i` to the end of the brace block that opens at or after it."""
    j = text.find("{", i)
    if j < 0:
        return ""
    depth = 0
    for k in range(j, len(text)):
        depth += text[k] == "{"
        depth -= text[k] == "}"
        if depth == 0:
            return text[i:k + 1]
    return text[i:]


def function_bodies(texts):
    """{name: body} of the functions defined in `texts` (name followed by its parameter list
    and a brace block)."""
    out = {}
    for text in texts:
        for m in re.finditer(r"\b(\w+)\s*\(([^;{}()]*(?:\([^()]*\)[^;{}()]*)*)\)\s*\{", text):
            if m.group(1) in ("if", "for", "while", "switch", "sizeof", "return"):
                continue
            out.setdefault(m.group(1), block_at(text, m.start()))
    return out


def sizes_checked(block, bodies, depth=0):
    """[(kind, type)] in order of appearance: kind "size" for a compared size, "elem" for an
    array element. Where the block compares none, the functions it hands the size to are
    followed (two calls deep; never into a dispatcher of several escapes)."""
    decl = dict((v, t) for t, v in re.findall(r"(\w+)\s*\*\s*(\w+)\s*[=;,)]", block))
    found = []

    def add(kind, expr):
        expr = expr.strip()
        t = decl.get(expr[1:].strip()) if expr.startswith("*") else expr
        if t and re.fullmatch(r"\w+", t) and (kind, t) not in found:
            found.append((kind, t))

    events = [(m.start(), "size", m.group(1) or m.group(2)) for m in SIZE_CMP.finditer(block)]
    events += [(m.start(), "elem", m.group(1)) for m in SIZE_ELEM.finditer(block)]
    for _, kind, expr in sorted(events):
        add(kind, expr)
    if found or depth >= 2:
        return found
    for m in re.finditer(r"\b(\w+)\s*\(([^;]*?" + SIZE_VAR + r"[^;]*?)\)\s*;", block):
        body = bodies.get(m.group(1))
        if body and "case NV_ESC_" not in body and "IOCTL_ENTRY" not in body:
            for e in sizes_checked(body, bodies, depth + 1):
                if e not in found:
                    found.append(e)
    return found


def escape_types(src):
    """{escape name: [(kind, type)]}: the types its handler checks the argument's size against
    (escape.c, osapi.c, nv.c): a validation table's entry, a `case NV_ESC_X:` block, or an
    `if (cmd == NV_ESC_X)` block handled before the switch."""
    texts = [strip_comments(read(os.path.join(src, p))) for p in ESC_SOURCES]
    bodies = function_bodies(texts)
    out = {}

    def add(name, entries):
        cur = out.setdefault(name, [])
        for e in entries:
            if e not in cur:
                cur.append(e)

    for text in texts:
        for m in IOCTL_ENTRY.finditer(text):
            add(m.group(1), [("elem" if m.group(3) == "NV_TRUE" else "size", m.group(2))])
    for text in texts:
        cases = list(re.finditer(r"case\s+NV_ESC_(\w+)\s*:", text))
        for i, cm in enumerate(cases):
            end = cases[i + 1].start() if i + 1 < len(cases) else len(text)
            block = text[cm.end():end]
            # A case that falls through to the next shares its block.
            if not block.strip():
                continue
            if re.match(r"\s*\{", block):
                block = block_at(block, 0)
            add(cm.group(1), sizes_checked(block, bodies))
        for m in re.finditer(r"\bif\s*\(\s*\w+\s*==\s*NV_ESC_(\w+)\s*\)", text):
            add(m.group(1), sizes_checked(block_at(text, m.end()), bodies))
    return out


# The frontend headers the records are read from, and the records emitted wherever a release
# declares them besides the escapes' and UVM's parameter structs.
FE_HEADERS = ["nvtypes.h", "nvos.h", "nv-ioctl.h", "nv-ioctl-numa.h",
              "nv-unix-nvos-params-wrappers.h", "nv-ioctl-lockless-diag.h", "class/cl0080.h",
              "class/cl2080.h", "ctrl/ctrl0000/ctrl0000gpu.h"]
NAMED_RECORDS = ["NVOS21_PARAMETERS", "NVOS64_PARAMETERS", "NVOS54_PARAMETERS",
                 "NV0080_ALLOC_PARAMETERS", "NV2080_ALLOC_PARAMETERS",
                 "NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS", "nv_ioctl_card_info_t",
                 "nv_ioctl_rm_api_version_t", "nv_ioctl_xfer_t", "nv_ioctl_export_to_dma_buf_fd_t",
                 "nv_ioctl_wait_open_complete_t"]


def fnv1a32(text):
    """FNV-1a, 32 bits, over the UTF-8 bytes (nvidia_fnv1a32() in nvidia_generated.h)."""
    h = 2166136261
    for b in text.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def put_keyed(table, name, value, what):
    """table[fnv1a32(name)] = value; two names with one key stop the generator."""
    k = fnv1a32(name)
    if k in table and table[k][1] != name:
        sys.exit("%s key collision: %s and %s both hash to 0x%08x" % (
            what, table[k][1], name, k))
    table[k] = (value, name)


SDK = "src/common/sdk/nvidia/inc"


def sdk_headers(src):
    """Every ctrl/ and class/ header of the SDK, and nvos.h."""
    base = os.path.join(src, SDK)
    hs = ["nvtypes.h", "nvos.h"]
    for sub in ("ctrl", "class"):
        hs += [os.path.relpath(p, base) for p in walk_files(os.path.join(base, sub), ".h")]
    return hs


# ---- one release ----

def generate_release(git_dir, tag):
    with tempfile.TemporaryDirectory(prefix="nvabi-src-") as src:
        extract(git_dir, tag, src)
        sdk = os.path.join(src, SDK)
        headers = walk_files(sdk, ".h")

        # Controls.
        methods = parse_methods(src)
        ctrl_names = {}
        ctrl_values = parse_defines(headers, r"NV\w+_CTRL_CMD_\w+")
        for name, v in ctrl_values.items():
            ctrl_names.setdefault(v, []).append(name)
        deprecated = parse_deprecated(src, ctrl_values)
        gss = parse_gss_masks(src)
        # A few commands are defined without _CMD_ in their name; FINN marks every command
        # number it evaluates as an interface id shifted left by 8 plus a message id.
        finn = re.compile(r'^#define\s+(NV\w+_CTRL_\w+)\s+\((0x[0-9a-fA-F]+)[uU]?\)\s*'
                          r'/\*\s*finn: Evaluated from "\(FINN_\w+_INTERFACE_ID << 8\)', re.M)
        for h in headers:
            for m in finn.finditer(read(h)):
                v = int(m.group(2), 16)
                if m.group(1) not in ctrl_names.get(v, []) and "_CTRL_CMD_" not in m.group(1):
                    ctrl_names.setdefault(v, []).append(m.group(1))
        # Command numbers the SDK defines: every FINN-evaluated one, and an NVxxxx_CTRL_CMD_
        # define whose value lies in class xxxx (the rest of those names are field values).
        cmd_names = {}
        finn_any = re.compile(r'^#define\s+(NV\w+)\s+\((0x[0-9a-fA-F]+)[uU]?\)\s*'
                              r'/\*\s*finn: Evaluated from "\(FINN_\w+_INTERFACE_ID << 8\)', re.M)
        for h in headers:
            for m in finn_any.finditer(read(h)):
                cmd_names.setdefault(int(m.group(2), 16), set()).add(m.group(1))
        for name, v in ctrl_values.items():
            cm = re.match(r"NV([0-9A-F]{4})_CTRL_CMD_", name)
            if cm and int(cm.group(1), 16) == v >> 16 and v >> 16 and \
                    not name.endswith("_MESSAGE_ID"):
                cmd_names.setdefault(v, set()).add(name)
        rmctrl = flag_bits(read(os.path.join(src, "src/nvidia/inc/kernel/rmapi/control.h")),
                           "RMCTRL_FLAGS_")

        # Classes: resource_list.h names each allocatable class, its NVOC class, its allocation
        # parameter struct and its RS_FLAGS.
        rl = strip_comments(read(os.path.join(src, "src/nvidia/src/kernel/rmapi/resource_list.h")))
        rsflag_text = read(os.path.join(src, "src/nvidia/src/kernel/rmapi/resource_desc_flags.h"))
        rsflags = flag_bits(rsflag_text, "RS_FLAGS_")
        rsflag_value = {"RS_FLAGS_" + n: v for v, n in rsflags}
        # Composite RS_FLAGS_ names (A | B) resolve through their parts.
        for m in re.finditer(r"^#define\s+(RS_FLAGS_\w+)\s+\(([^)]*)\)", rsflag_text, re.M):
            parts = [p.strip() for p in m.group(2).split("|")]
            if all(p in rsflag_value for p in parts):
                v = 0
                for p in parts:
                    v |= rsflag_value[p]
                rsflag_value[m.group(1)] = v
        class_ids = parse_defines(walk_files(os.path.join(sdk, "class"), ".h") +
                                  [os.path.join(sdk, "nvos.h")], r"[A-Z][A-Z0-9_]+")
        entries = []
        for m in re.finditer(r"RS_ENTRY\s*\((.*?)\)\s*(?=RS_ENTRY|#|$)", rl, re.S):
            args = split_args(m.group(1))
            if len(args) < 8:
                continue
            ext, internal, _multi, _parents, param, _prio, flags = args[:7]
            pm = re.match(r"RS_(REQUIRED|OPTIONAL)\((\w+)\)", param)
            fl = 0
            unknown_flag = False
            for part in flags.split("|"):
                part = part.strip()
                if part in ("", "RS_FLAGS_NONE", "0"):
                    continue
                if part in rsflag_value:
                    fl |= rsflag_value[part]
                else:
                    unknown_flag = True
            entries.append((ext, internal, pm.group(1) if pm else "NONE",
                            pm.group(2) if pm else "", fl, unknown_flag))

        # Escapes.
        esc_files = [os.path.join(src, "kernel-open/common/inc/nv-ioctl-numbers.h"),
                     os.path.join(src, "kernel-open/common/inc/nv-ioctl-numa.h"),
                     os.path.join(src, "src/nvidia/arch/nvalloc/unix/include/nv_escape.h")]
        escapes = {}
        base = re.search(r"#define\s+NV_IOCTL_BASE\s+(\d+)", read(esc_files[0]))
        for p in esc_files:
            text = read(p)
            for m in re.finditer(r"^#define\s+NV_ESC_(\w+)\s+(?:\(NV_IOCTL_BASE\s*\+\s*(\d+)\)|"
                                 r"(0x[0-9a-fA-F]+|\d+))", text, re.M):
                nr = int(base.group(1)) + int(m.group(2)) if m.group(2) else int(m.group(3), 0)
                escapes.setdefault(m.group(1), nr)
        esc_types = escape_types(src)

        # UVM ioctls: UVM_X = UVM_IOCTL_BASE(n) or a literal, parameters UVM_X_PARAMS.
        linux_text = read(os.path.join(src, "kernel-open/nvidia-uvm/uvm_linux_ioctl.h"))
        uvm_text = read(os.path.join(src, "kernel-open/nvidia-uvm/uvm_ioctl.h")) + "\n" + linux_text
        uvm = {}
        for m in re.finditer(r"^#define\s+(UVM_[A-Z0-9_]+)\s+(?:UVM_IOCTL_BASE\((\d+)\)|"
                             r"(0x[0-9a-fA-F]+))\s*$", uvm_text, re.M):
            uvm.setdefault(m.group(1), int(m.group(2)) if m.group(2) else int(m.group(3), 16))
        uvm_param_types = set(re.findall(r"\}\s*(UVM_[A-Z0-9_]+_PARAMS)\s*;", uvm_text)) | \
            set(re.findall(r"typedef\s+\w+\s+(UVM_[A-Z0-9_]+_PARAMS)\s*;", uvm_text))
        # Only names that are ioctls: those with a parameter struct, and uvm_linux_ioctl.h's.
        uvm = {n: v for n, v in uvm.items()
               if n + "_PARAMS" in uvm_param_types
               or re.search(r"define\s+" + n + r"\b", linux_text)}

        # Sizes: the SDK's structs by sizeof; the frontend's and UVM's records with their
        # layouts.
        sdk_types = {m[4] for m in methods if m[4]} | {e[3] for e in entries if e[3]}
        sdk_sizes = sizes_of(src, sdk_types, sdk_headers(src), [SDK])
        fe_types = {t for ts in esc_types.values() for _, t in ts} | set(NAMED_RECORDS)
        fe_includes = [SDK, "kernel-open/common/inc", "src/nvidia/arch/nvalloc/unix/include"]
        fe_layouts = layouts_of(
            src, fe_types,
            [h for h in FE_HEADERS
             if any(os.path.exists(os.path.join(src, i, h)) for i in fe_includes)],
            fe_includes)
        uvm_layouts = layouts_of(
            src, uvm_param_types, ["uvm_ioctl.h", "uvm_linux_ioctl.h"],
            ["kernel-open/nvidia-uvm", "kernel-open/common/inc", SDK])

        # Interface names (FINN_<NAME>_INTERFACE_ID), and the command numbers the SDK names
        # that no exported method table has.
        interfaces = {}
        for m in re.finditer(r"^#define\s+FINN_(\w+)_INTERFACE_ID\s+\((0x[0-9a-fA-F]+)[uU]?\)",
                             read(os.path.join(sdk, "g_finn_rm_api.h")), re.M):
            interfaces.setdefault(int(m.group(2), 16), m.group(1))
        # The interfaces the SDK only names in FINN's comments (the legacy ones of GSS-forwarded
        # commands, e.g. NV20_SUBDEVICE_0_THERMAL_LEGACY_NON_PRIVILEGED): a command evaluated
        # from "(FINN_<NAME>_INTERFACE_ID << 8) | ..." lies in interface <NAME>.
        finn_iface = re.compile(r'^#define\s+NV\w+\s+\((0x[0-9a-fA-F]+)[uU]?\)\s*'
                                r'/\*\s*finn: Evaluated from "\(FINN_(\w+)_INTERFACE_ID << 8\)',
                                re.M)
        for h in headers:
            for m in finn_iface.finditer(read(h)):
                interfaces.setdefault(int(m.group(1), 16) >> 8, m.group(2))
        exported = {m[1] for m in methods}
        command_names = {v: pick_control_name(sorted(ns), "") for v, ns in cmd_names.items()
                         if v not in exported}

    # Assemble, keyed by number.
    controls = {}
    for cls, mid, flags, access, ptype, func in methods:
        name = pick_control_name(ctrl_names.get(mid, []), func) or func
        size = 0 if ptype == "" else sdk_sizes.get(ptype, -1) if ptype else -1
        rec = (name, cls, size, flags, access)
        if mid in controls and controls[mid] != rec:
            # Several NVOC classes export one id (a base class's table and a subclass's):
            # name every class, keep the first record's facts.
            old = controls[mid]
            if cls not in old[1].split("|"):
                controls[mid] = (old[0], "|".join(sorted(old[1].split("|") + [cls])),
                                 old[2], old[3], old[4])
        else:
            controls[mid] = rec
    classes = {}
    for ext, internal, req, ptype, fl, unknown_flag in entries:
        if ext not in class_ids:
            continue
        cid = class_ids[ext]
        size = sdk_sizes.get(ptype, -1) if ptype else 0
        rec = (ext, internal, size, req, fl)
        if cid in classes and classes[cid][0] != ext:
            continue
        classes.setdefault(cid, rec)
    records = {}
    for t, lay in list(fe_layouts.items()) + list(uvm_layouts.items()):
        if lay[1]:  # a struct or union (a scalar element type has no members)
            records[t] = lay
    esc = {}
    for name, nr in escapes.items():
        size, elem = [], []
        for kind, t in esc_types.get(name, []):
            if t in fe_layouts:
                (elem if kind == "elem" else size).append(t)
        # The larger (newer) struct first: RM_ALLOC takes NVOS64_PARAMETERS or NVOS21.
        size = sorted(set(size), key=lambda t: (-fe_layouts[t][0], t))
        elem = sorted(set(elem), key=lambda t: (-fe_layouts[t][0], t))
        if elem and not size:
            t = elem[0]
            rows_ = (name, 0, 0, fe_layouts[t][0], -1, -1, t if t in records else "", "")
        else:
            ts = size[:2]
            sz = [fe_layouts[t][0] for t in ts] + [0, 0]
            st = [status_offset(records[t], STATUS_NAMES) if t in records else -1
                  for t in ts] + [-1, -1]
            rec = [t if t in records else "" for t in ts] + ["", ""]
            rows_ = (name, sz[0], sz[1], 0, st[0], st[1], rec[0], rec[1])
        esc[nr] = rows_
    uvm_out = {}
    for name, cmd in uvm.items():
        if name in ("UVM_IOCTL_BASE",):
            continue
        t = name + "_PARAMS"
        if t in uvm_layouts:
            size = uvm_layouts[t][0]
            st = status_offset(uvm_layouts[t], ["rmStatus"])
        else:
            # No parameter struct declared at all: the ioctl takes none.
            size = -1 if t in uvm_param_types else 0
            st = -1
        uvm_out[cmd] = (name, size, st)
    rec_out, field_out = {}, {}
    for t, (size, fields) in records.items():
        put_keyed(rec_out, t, (t, size), "record")
        for path, off, fsize, _ in fields:
            put_keyed(field_out, t + "." + path, (t, path, off, fsize), "field")
    return {
        "controls": controls,
        "classes": classes,
        "escapes": esc,
        "uvm": uvm_out,
        "rmctrl_flags": dict(rmctrl),
        "rs_flags": dict(rsflags),
        "deprecated": deprecated,
        "gss": gss,
        "records": rec_out,
        "fields": field_out,
        "interfaces": interfaces,
        "command_names": command_names,
    }


# ---- output: C++ initializers, one file per release (its patch against its parent) ----

PARAM_KIND = {"NONE": 0, "OPTIONAL": 1, "REQUIRED": 2}


def row_name_limits():
    """(name, RM class name) capacities of a row's char arrays, from nvidia_generated.h (the one
    place they are written), less the terminating NUL."""
    header = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          "../../proxy/abi/nvidia_generated.h")
    text = read(header)

    def limit(name):
        m = re.search(r"\b%s = (\d+);" % name, text)
        if not m:
            sys.exit("%s: no %s" % (header, name))
        return int(m.group(1)) - 1
    return limit("kNvGenName"), limit("kNvGenRmClassName")


def check_names_fit(version, table_rows, limits):
    """Exits when a name is longer than a row holds (the tables keep names in the rows);
    `limits` is row_name_limits()."""
    name_max, class_max = limits
    for table, by_key in table_rows.items():
        for text in by_key.values():
            for i, s in enumerate(re.findall(r'"([^"]*)"', text)):
                is_class = table in ("controls", "classes") and i == 1
                cap = class_max if is_class else name_max
                if len(s) > cap:
                    sys.exit("%s: %s name %r has %d characters, more than the %d a row holds "
                             "(raise %s in proxy/abi/nvidia_generated.h)" % (
                                 version, table, s, len(s), cap,
                                 "kNvGenRmClassName" if is_class else "kNvGenName"))


def rows(rel):
    """{table: {key: initializer text}} of one release."""
    c = {k: '{0x%08xu, "%s", "%s", %d, 0x%xu, 0x%xu}' % (k, n, cls, size, fl, acc)
         for k, (n, cls, size, fl, acc) in rel["controls"].items()}
    k_ = {k: '{0x%04xu, "%s", "%s", %d, %d, 0x%xu}' % (k, n, cls, size, PARAM_KIND[req], fl)
          for k, (n, cls, size, req, fl) in rel["classes"].items()}
    e = {k: '{0x%02xu, "%s", %d, %d, %d, %d, %d, "%s", "%s"}' % ((k,) + v)
         for k, v in rel["escapes"].items()}
    u = {k: '{0x%xu, "%s", %d, %d}' % (k, n, size, st)
         for k, (n, size, st) in rel["uvm"].items()}
    r = {k: '{0x%08xu, "%s", %d}' % (k, n, size) for k, ((n, size), _) in rel["records"].items()}
    fl = {k: '{0x%08xu, "%s", "%s", %d, %d}' % ((k,) + v)
          for k, (v, _) in rel["fields"].items()}
    it = {k: '{0x%xu, "%s"}' % (k, n) for k, n in rel["interfaces"].items()}
    cn = {k: '{0x%08xu, "%s"}' % (k, n) for k, n in rel["command_names"].items()}
    rf = {k: '{0x%xu, "%s"}' % (k, n) for k, n in rel["rmctrl_flags"].items()}
    sf = {k: '{0x%xu, "%s"}' % (k, n) for k, n in rel["rs_flags"].items()}
    d = {k: '{0x%08xu, "%s", 0x%08xu}' % (k, n, t) for k, (n, t) in rel["deprecated"].items()}
    g = {k: '{0x%xu, "%s"}' % (k, n) for k, n in rel["gss"].items()}
    return {"controls": c, "classes": k_, "escapes": e, "uvm": u, "rmctrl_flags": rf,
            "rs_flags": sf, "deprecated": d, "gss": g, "records": r, "fields": fl,
            "interfaces": it, "command_names": cn}


TABLE_TYPE = {"controls": "NvGenControl", "classes": "NvGenClass", "escapes": "NvGenEscape",
              "uvm": "NvGenUvmIoctl", "rmctrl_flags": "NvGenFlag", "rs_flags": "NvGenFlag",
              "deprecated": "NvGenDeprecated", "gss": "NvGenFlag", "records": "NvGenRecord",
              "fields": "NvGenField", "interfaces": "NvGenInterface",
              "command_names": "NvGenCommandName"}
TABLES = ("controls", "classes", "escapes", "uvm", "rmctrl_flags", "rs_flags", "deprecated",
          "gss", "records", "fields", "interfaces", "command_names")


def ident(v):
    return "r" + v.replace(".", "_")


def emit_release(version, tag, parent, cur, prev):
    """The .inc text of one release: entries added or changed against `prev`, keys removed."""
    out = ["// Generated by scripts/nvidia-abi/generate.py from NVIDIA/open-gpu-kernel-modules"
           " at tag %s; do not edit." % tag,
           "// Release %s = %s plus the entries below." % (version, parent or "nothing")]
    spans = {}
    for table in TABLES:
        now = cur[table]
        before = prev[table] if prev else {}
        add = [now[k] for k in sorted(now) if before.get(k) != now[k]]
        rem = [k for k in sorted(before) if k not in now]
        name = "k%s_%s" % (ident(version), table)
        if add:
            out.append("constexpr %s %s_add[] = {" % (TABLE_TYPE[table], name))
            out += ["    %s," % a for a in add]
            out.append("};")
        if rem:
            out.append("constexpr uint32_t %s_remove[] = {" % name)
            out += ["    0x%xu," % k for k in rem]
            out.append("};")
        spans[table] = ("%s_add" % name if add else "{}", "%s_remove" % name if rem else "{}")
    entry = '    {"%s", "%s", "%s", %s},' % (
        version, parent, tag,
        ", ".join("{%s, %s}" % spans[t] for t in TABLES))
    return "\n".join(out) + "\n", entry


def load_release_list(path):
    """[(version, source tag, supplement tag or None)] in version order. A line is a tag;
    `VERSION = TAG` is a release the source has no tag for, taken to be that tag's tables;
    `VERSION = TAG + NEWER` also takes the controls and classes of the NEWER tag that TAG lacks
    (a later release of TAG's branch that carries controls back from a newer branch)."""
    out = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if "=" in line:
                v, t = (x.strip() for x in line.split("=", 1))
            else:
                v = t = line
            t, _, extra = (x.strip() for x in t.partition("+"))
            out.append((v, t, extra or None))
    return sorted(out, key=lambda vt: version_key(vt[0]))


def supplemented(base, newer):
    """base's rows plus the controls, classes, interface names and command names only `newer`
    has (a command name only while no control of that number is exported). Escapes, UVM
    ioctls and record layouts stay base's own."""
    out = {t: dict(rows_) for t, rows_ in base.items()}
    for table in ("controls", "classes", "interfaces", "command_names"):
        for k, v in newer[table].items():
            out[table].setdefault(k, v)
    for k in list(out["command_names"]):
        if k in out["controls"]:
            del out["command_names"][k]
    return out


def add_release(git_dir, path, tag):
    """Appends `tag` to the releases file unless a line already lists that version."""
    if not re.fullmatch(r"\d+(\.\d+)+", tag):
        sys.exit("not a release tag: %s" % tag)
    if subprocess.run(["git", "--git-dir", git_dir, "rev-parse", "-q", "--verify",
                       "refs/tags/" + tag], capture_output=True).returncode != 0:
        sys.exit("the source has no tag %s" % tag)
    if any(v == tag for v, _, _ in load_release_list(path)):
        print("%s is already listed" % tag, file=sys.stderr)
        return
    with open(path, "a") as f:
        f.write(tag + "\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--git-dir", required=True,
                    help="a clone (bare or not) of NVIDIA/open-gpu-kernel-modules with its tags")
    ap.add_argument("--releases", default=os.path.join(here, "releases.txt"))
    ap.add_argument("--out", default=os.path.join(root, "proxy/abi/generated"))
    ap.add_argument("--add-tag", action="append", default=[], metavar="TAG",
                    help="append TAG (a tag of the source) to the releases file, then generate")
    args = ap.parse_args()
    git_dir = args.git_dir
    if os.path.isdir(os.path.join(git_dir, ".git")):
        git_dir = os.path.join(git_dir, ".git")
    for tag in args.add_tag:
        add_release(git_dir, args.releases, tag)
    releases = load_release_list(args.releases)
    os.makedirs(args.out, exist_ok=True)
    cache = {}

    def rows_of(tag):
        if tag not in cache:
            print("generating %s" % tag, file=sys.stderr)
            cache[tag] = rows(generate_release(git_dir, tag))
        return cache[tag]

    limits = row_name_limits()
    prev_rows = None
    prev_version = ""
    entries = []
    includes = []
    for i, (version, tag, extra) in enumerate(releases):
        cur = rows_of(tag)
        if extra:
            cur = supplemented(cur, rows_of(extra))
        check_names_fit(version, cur, limits)
        # Keep only what a later release can still need.
        wanted = {t for _, tg, ex in releases[i + 1:] for t in (tg, ex) if t}
        for t in list(cache):
            if t not in wanted:
                del cache[t]
        source = tag + ("+" + extra if extra else "")
        text, entry = emit_release(version, source, prev_version, cur, prev_rows)
        fname = "nvidia_%s.inc" % version
        with open(os.path.join(args.out, fname), "w") as f:
            f.write(text)
        includes.append(fname)
        entries.append(entry)
        prev_rows, prev_version = cur, version
    index = ["// Generated by scripts/nvidia-abi/generate.py; do not edit. Every release the",
             "// generated tables cover, oldest first; each is its parent plus its own file."]
    index += ['#include "proxy/abi/generated/%s"' % i for i in includes]
    index.append("constexpr NvGenRelease kGeneratedReleases[] = {")
    index += entries
    index.append("};")
    with open(os.path.join(args.out, "nvidia_releases.inc"), "w") as f:
        f.write("\n".join(index) + "\n")
    # Files of releases no longer listed would be stale: remove them.
    for f in os.listdir(args.out):
        if f.startswith("nvidia_") and f.endswith(".inc") and f != "nvidia_releases.inc" \
                and f not in includes:
            os.remove(os.path.join(args.out, f))


if __name__ == "__main__":
    main()
