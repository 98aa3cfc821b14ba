"""Calls every nvmlDeviceGet* function libnvidia-ml.so.1 exports, on every GPU, through ctypes
(no extra package), and prints one JSON object per line: {"gpu", "fn", "rc", "out"}, where rc is
the NVML return code and out says which output buffers the call wrote ("-" none, "1" the first,
...). tests/gpu/compare_nvml.py compares a sandboxed run with a native one.

The one idea: NVML's signatures are not in the library, so each function is called three ways
(device, P, P, P), (device, 0, P, P) and (device, 0, 0, P), where P are zeroed 64 KiB buffers
whose first word is 256 (a count or a length for functions that take one). Extra arguments are
harmless in the x86-64 calling convention. A function that crashes the process is reported as
such by the parent, which restarts the sweep after it.
    python3 nvml_sweep.py            # the whole sweep, crash-proof
    python3 nvml_sweep.py --child N  # internal: the sweep from function N on
"""
import ctypes
import json
import struct
import subprocess
import sys

LIB = "libnvidia-ml.so.1"
BUF = 1 << 16


def exported_getters(path):
    """Names of the nvmlDeviceGet* functions in the library's dynamic symbol table."""
    data = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = set()
    for s in sections:
        if s[1] != 11:  # SHT_DYNSYM
            continue
        strtab = sections[s[6]]
        for off in range(s[4], s[4] + s[5], 24):
            name_off, info = struct.unpack_from("<IB", data, off)
            if info & 0xF != 2:  # STT_FUNC
                continue
            start = strtab[4] + name_off
            name = data[start:data.index(b"\0", start)].decode()
            if name.startswith("nvmlDeviceGet") and "@" not in name:
                names.add(name)
    return sorted(names)


def library_path():
    for line in open("/proc/self/maps"):
        if LIB.split(".so")[0] in line:
            return line.split()[-1]
    raise SystemExit("libnvidia-ml.so.1 not mapped")


def getters():
    """The library (loaded) and the getters to sweep: all but the handle and count lookups."""
    nvml = ctypes.CDLL(LIB)
    skip = ("Handle", "nvmlDeviceGetCount")
    return nvml, [f for f in exported_getters(library_path()) if not any(s in f for s in skip)]


def sweep(start):
    nvml, fns = getters()
    if nvml.nvmlInit_v2() != 0:
        raise SystemExit("nvmlInit_v2 failed")
    count = ctypes.c_uint(0)
    nvml.nvmlDeviceGetCount_v2(ctypes.byref(count))
    bufs = [ctypes.create_string_buffer(BUF) for _ in range(3)]
    for i, fn in enumerate(fns):
        if i < start:
            continue
        lines = []
        for gpu in range(count.value):
            dev = ctypes.c_void_p()
            nvml.nvmlDeviceGetHandleByIndex_v2(gpu, ctypes.byref(dev))
            f = getattr(nvml, fn)
            f.restype = ctypes.c_int
            results = []
            for shape in ((0, 1, 2), (None, 0, 1), (None, None, 0)):
                for b in bufs:
                    ctypes.memset(b, 0, BUF)
                    struct.pack_into("<I", b, 0, 256)
                args = [dev] + [ctypes.c_void_p(0) if s is None else bufs[s] for s in shape]
                rc = f(*args)
                written = "".join(str(n + 1) for n, b in enumerate(bufs)
                                  if b.raw[:4] != struct.pack("<I", 256) or any(b.raw[4:4096]))
                results.append(f"{rc}:{written or '-'}")
            lines.append(json.dumps({"i": i, "gpu": gpu, "fn": fn, "rc": results}))
        # A function's lines are printed together, so that a crash is pinned on one function.
        print("\n".join(lines), flush=True)
    print(json.dumps({"done": len(fns)}), flush=True)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        sweep(int(sys.argv[2]))
        return
    _, fns = getters()
    start = 0
    while start < len(fns):
        try:
            p = subprocess.run([sys.executable, __file__, "--child", str(start)],
                               stdout=subprocess.PIPE, text=True, timeout=120)
            out, rc = p.stdout, p.returncode
        except subprocess.TimeoutExpired as e:
            out, rc = (e.stdout or b"").decode(), "timeout"
        last = None
        for line in out.splitlines():
            rec = json.loads(line)
            if "done" in rec:
                return
            print(line, flush=True)
            last = rec
        crashed = start if last is None else last["i"] + 1
        # The function after the last one reported took the process down: say so, go on after it.
        if crashed < len(fns):
            print(json.dumps({"i": crashed, "gpu": -1, "fn": fns[crashed], "rc": [f"crash:{rc}"]}),
                  flush=True)
        start = crashed + 1


if __name__ == "__main__":
    main()
