"""Compares what an NVIDIA tool printed in a sandbox with what it printed natively.
    compare_tools.py text NATIVE1 NATIVE2 SANDBOX   # nvidia-smi, nvidia-smi -q
    compare_tools.py nvml NATIVE1 NATIVE2 SANDBOX   # nvml_sweep.py outputs
The one idea: what changes between two native runs (temperatures, power, clocks, times) is
volatile; it is blanked in all three before the sandboxed output is compared with the native.
Prints each difference and a last line `SAME` or `DIFFERENT (N)`; exit status 0 only for SAME.
"""
import difflib
import json
import re
import sys

NUM = re.compile(r"\d+(?:\.\d+)?")
# Fields volatile by nature that two back-to-back native runs can agree on: whether the clocks
# were held at idle during the last sampling interval depends on what touched the GPU just
# before (a sandbox's start asks the driver about its GPUs, which wakes them).
VOLATILE_FIELDS = re.compile(r"^\s*Idle\s*:")


def volatile_mask(a, b):
    """For each line index: the number positions whose values differ between a and b."""
    masks = []
    for la, lb in zip(a, b):
        na, nb = NUM.findall(la), NUM.findall(lb)
        masks.append({i for i in range(max(len(na), len(nb)))
                      if i >= len(na) or i >= len(nb) or na[i] != nb[i]})
    return masks


# Readings in these units are measurements (power, temperature, load, clocks, traffic, time):
# blanked always, as two native runs may agree on a value by chance. That they are read at all,
# and not "ERR!" or "blocked", is still compared.
MEASURED = re.compile(r"\s*(?:W|C|%|MHz|KB/s|us|ms)(?![A-Za-z])")


def blank(line, mask):
    out, i = [], 0
    parts = re.split(r"(\d+(?:\.\d+)?)", line)
    for n, part in enumerate(parts):
        if NUM.fullmatch(part):
            rest = parts[n + 1] if n + 1 < len(parts) else ""
            out.append("#" if i in mask or MEASURED.match(rest) else part)
            i += 1
        else:
            out.append(part)
    return re.sub(r"\s+", " ", "".join(out)).strip()


def text(n1, n2, s):
    a, b, c = (open(p).read().splitlines() for p in (n1, n2, s))
    diffs = []
    if len(a) != len(b):
        print(f"the two native runs differ in length ({len(a)} and {len(b)} lines)")
    masks = volatile_mask(a, b)
    def skeleton(lines):
        return [re.sub(r"\s+", " ", NUM.sub("#", x)).strip() if not VOLATILE_FIELDS.match(x)
                else "volatile" for x in lines]
    # Lines are paired by their text with every number blanked, so that a line missing or
    # added in the sandbox shows as that line and not as every line after it.
    ops = difflib.SequenceMatcher(None, skeleton(a), skeleton(c), autojunk=False).get_opcodes()
    for op, i1, i2, j1, j2 in ops:
        if op != "equal":
            for i in range(i1, i2):
                diffs.append(f"native line {i + 1} not in the sandbox's: {a[i].strip()!r}")
            for j in range(j1, j2):
                diffs.append(f"sandbox line {j + 1} not in the native: {c[j].strip()!r}")
            continue
        for i, j in zip(range(i1, i2), range(j1, j2)):
            m = masks[i] if i < len(masks) else set()
            # The time of day is volatile whatever the two native runs say.
            if re.search(r"\d\d:\d\d:\d\d", a[i]):
                m = set(range(64))
            if VOLATILE_FIELDS.match(a[i]) and VOLATILE_FIELDS.match(c[j]):
                continue
            if blank(a[i], m) != blank(c[j], m):
                diffs.append(f"line {i + 1}: native {a[i].strip()!r}, sandbox {c[j].strip()!r}")
    return diffs


def nvml(n1, n2, s):
    def load(p):
        out = {}
        for line in open(p):
            r = json.loads(line)
            out[(r["gpu"], r["fn"])] = r["rc"]
        return out
    a, b, c = load(n1), load(n2), load(s)
    diffs = []
    for k in sorted(a):
        if a[k] != b.get(k):
            continue  # differs natively from run to run: not comparable
        if c.get(k) != a[k]:
            diffs.append(f"gpu {k[0]} {k[1]}: native {a[k]}, sandbox {c.get(k)}")
    ok = sum(1 for k in a if a[k] == b.get(k) and any(x.startswith("0:") for x in a[k]))
    print(f"{len(a)} calls compared, {ok} succeed natively in some argument shape")
    return diffs


def main():
    kind, n1, n2, s = sys.argv[1:5]
    diffs = (text if kind == "text" else nvml)(n1, n2, s)
    for d in diffs[:40]:
        print(d)
    print("SAME" if not diffs else f"DIFFERENT ({len(diffs)})")
    sys.exit(0 if not diffs else 1)


if __name__ == "__main__":
    main()
