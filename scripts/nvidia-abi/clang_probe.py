"""Asks the host's clang what the driver's headers declare, for generate.py: the size of each
struct, the offset and size of each of its members, and where its NV_STATUS sits.

The one idea: a size or offset is never computed by hand; a small program over the driver's own
headers is compiled (and the sizes run) on this machine, so the facts are those of its ABI: run
the generator on x86-64 Linux. A type the headers cannot give is left out, never guessed.
"""
import os
import re
import subprocess
import sys
import tempfile

from driver_source import read, walk_files

# clang, because it can be told not to look for a spelling suggestion for each unknown name
# (gcc takes minutes on the SDK's thousands of identifiers). Sizes are those of the host's ABI:
# run the generator on x86-64 Linux.
COMPILER = ["clang", "-fno-spell-checking", "-ferror-limit=0"]


def sizes_of(src, types, headers, includes):
    """{type: sizeof} for the types the driver's headers declare; a type that does not compile
    (declared elsewhere, or needs kernel headers) is left out rather than guessed."""
    # Only names a header declares (a typedef or a struct tag): an undeclared name would make
    # the compiler search every identifier for a suggestion, which takes a minute.
    declared = declared_names(src, includes)
    types = sorted(set(t for t in types if t and t in declared))
    if not types:
        return {}
    tmp = tempfile.mkdtemp(prefix="nvabi-")
    c = os.path.join(tmp, "s.c")
    exe = os.path.join(tmp, "s")
    for _ in range(60):
        with open(c, "w") as f:
            f.write("#include <stdio.h>\n#include <stddef.h>\n")
            for h in headers:
                f.write('#include "%s"\n' % h)
            f.write("int main(void) {\n")
            for t in types:
                f.write('  printf("%%s %%zu\\n", "%s", sizeof(%s));\n' % (t, t))
            f.write("  return 0;\n}\n")
        r = subprocess.run(COMPILER + ["-w", "-o", exe, c] +
                           ["-I" + os.path.join(src, i) for i in includes],
                           capture_output=True, text=True)
        if r.returncode == 0:
            break
        bad = set()
        for line in r.stderr.splitlines():
            if not line.startswith(c + ":"):
                continue
            m = re.match(re.escape(c) + r":(\d+):", line)
            if m:
                ln = int(m.group(1))
                # main's printf lines start after the includes and "int main" line.
                idx = ln - (len(headers) + 4)
                if 0 <= idx < len(types):
                    bad.add(types[idx])
        if not bad:
            sys.exit("sizeof probe failed for a reason other than an unknown type:\n" +
                     r.stderr[-3000:])
        types = [t for t in types if t not in bad]
    else:
        sys.exit("sizeof probe did not converge")
    out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    sizes = {}
    for line in out.splitlines():
        n, s = line.split()
        sizes[n] = int(s)
    return sizes


def declared_names(src, includes):
    """The typedef and struct names the headers under `includes` declare."""
    declared = set()
    for i in includes:
        for h in walk_files(os.path.join(src, i), ".h"):
            text = read(h)
            declared.update(re.findall(r"\}\s*(\w+)\s*;", text))
            declared.update(re.findall(r"typedef\s+[\w\s\*]+?\b(\w+)\s*;", text))
    return declared


def probe(src, lines, headers, includes, what):
    """Compiles one line per item of `lines` after `headers` with the record layouts dumped,
    dropping the items whose line does not compile (retried until it does). Returns (the
    indexes kept, the dump's text)."""
    tmp = tempfile.mkdtemp(prefix="nvabi-")
    c = os.path.join(tmp, "p.c")
    keep = list(range(len(lines)))
    try:
        for _ in range(60):
            with open(c, "w") as f:
                f.write("#include <stddef.h>\n")
                for h in headers:
                    f.write('#include "%s"\n' % h)
                for i in keep:
                    f.write(lines[i] + "\n")
            r = subprocess.run(COMPILER + ["-w", "-fsyntax-only", "-Xclang",
                                           "-fdump-record-layouts", c] +
                               ["-I" + os.path.join(src, i) for i in includes],
                               capture_output=True, text=True)
            if r.returncode == 0:
                return keep, r.stdout
            first = len(headers) + 2
            bad = set()
            for line in r.stderr.splitlines():
                m = re.match(re.escape(c) + r":(\d+):", line)
                if m and 0 <= int(m.group(1)) - first < len(keep):
                    bad.add(keep[int(m.group(1)) - first])
            if not bad:
                sys.exit("%s probe failed for a reason other than an unknown type:\n%s" %
                         (what, r.stderr[-3000:]))
            keep = [i for i in keep if i not in bad]
        sys.exit("%s probe did not converge" % what)
    finally:
        for f in os.listdir(tmp):
            os.remove(os.path.join(tmp, f))
        os.rmdir(tmp)


DUMP_LINE = re.compile(r"^\s*(\d+)(:\d+-\d+)?\s*\|( +)(.*?)\s*$")


def parse_dump(text, prefix):
    """{record name: (sizeof, [(depth, offset, type, member name or None, bitfield)])} of the
    dumped records whose name starts with `struct PREFIX`."""
    out = {}
    for chunk in text.split("*** Dumping AST Record Layout")[1:]:
        lines = chunk.strip("\n").splitlines()
        head = DUMP_LINE.match(lines[0]) if lines else None
        if not head or not head.group(4).startswith("struct " + prefix):
            continue
        name = head.group(4).split()[1]
        members = []
        size = None
        for line in lines[1:]:
            m = re.search(r"\[sizeof=(\d+),", line)
            if m:
                size = int(m.group(1))
                break
            d = DUMP_LINE.match(line)
            if not d:
                continue
            depth = (len(d.group(3)) - 1) // 2
            body = d.group(4)
            # "TYPE NAME"; an anonymous struct or union member ends with its type.
            nm = re.match(r"^(.*\S)\s+([A-Za-z_]\w*)$", body)
            if nm and not body.endswith(")"):
                members.append((depth, int(d.group(1)), nm.group(1), nm.group(2),
                                bool(d.group(2))))
            else:
                members.append((depth, int(d.group(1)), body, None, bool(d.group(2))))
        out[name] = (size, members)
    return out


SIGNED = re.compile(r"^(?:const\s+)?(?:int|signed\b.*|NvS\d+|int\d+_t|long|short)$")


def layouts_of(src, types, headers, includes):
    """{type: (sizeof, [(field path, offset, size, member type)])} for the types the driver's
    headers declare, from the host clang's record layouts: each type is wrapped in a struct
    whose layout clang dumps with every nested member's offset; a member's size is one more
    sizeof probe. Nested struct and union members are flattened into dotted paths (anonymous
    ones add no component); an array is one field; bit-fields are left out."""
    declared = declared_names(src, includes)
    types = sorted(set(t for t in types if t and t in declared))
    if not types:
        return {}
    lines = ["struct nvabi_r%d { %s v; }; enum { nvabi_e%d = sizeof(struct nvabi_r%d) };" %
             (i, t, i, i) for i, t in enumerate(types)]
    keep, dump = probe(src, lines, headers, includes, "layout")
    recs = parse_dump(dump, "nvabi_r")
    layouts = {}
    fields = []  # (type, path, offset, member type)
    for i in keep:
        t = types[i]
        size, members = recs["nvabi_r%d" % i]
        rows = []
        stack = []  # names (or None) of the enclosing members by depth
        for depth, off, mtype, name, bitfield in members:
            del stack[depth - 1:]
            stack.append(name)
            if depth < 2 or bitfield:
                continue
            path = ".".join(n for n in stack[1:] if n)
            if name:
                rows.append((path, off, mtype))
        layouts[t] = (size, rows)
        fields += [(t, p, o, mt) for p, o, mt in rows]
    if not fields:
        return {t: (s, []) for t, (s, _) in layouts.items()}
    lines = ["struct nvabi_f%d { char c[sizeof(((%s *)0)->%s)]; }; "
             "enum { nvabi_g%d = sizeof(struct nvabi_f%d) };" % (j, t, p, j, j)
             for j, (t, p, _, _) in enumerate(fields)]
    keep, dump = probe(src, lines, headers, includes, "field size")
    sizes = {int(n[len("nvabi_f"):]): s for n, (s, _) in parse_dump(dump, "nvabi_f").items()}
    out = {t: (s, []) for t, (s, _) in layouts.items()}
    for j in keep:
        t, p, o, mt = fields[j]
        out[t][1].append((p, o, sizes[j], mt))
    return out


def status_offset(layout, names):
    """The offset of the NV_STATUS a driver writes back into a struct: the shallowest
    4-byte unsigned member whose own name is one of `names`; -1 when there is none."""
    best = None
    for path, off, size, mtype in layout[1]:
        parts = path.split(".")
        if parts[-1] not in names or size != 4 or SIGNED.match(mtype):
            continue
        key = (len(parts), names.index(parts[-1]), off)
        if best is None or key < best[0]:
            best = (key, off)
    return best[1] if best else -1


STATUS_NAMES = ["status", "Status", "rmStatus", "adapterStatus"]
