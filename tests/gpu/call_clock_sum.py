"""Sums the per-process totals tests/gpu/call_clock.c left in a directory. Prints one line:
ioctl_calls open_calls total_ms max_process_ms, where total_ms is the time all processes spent
in ioctl and open together and max_process_ms that of the process that spent the most (ranks
run side by side, so the slowest one bounds what the calls add to the wall time)."""
import os
import struct
import sys

directory = sys.argv[1]
ioctls = opens = 0
total_ns = max_ns = 0
for name in os.listdir(directory):
    with open(os.path.join(directory, name), "rb") as f:
        data = f.read(64)
    if len(data) < 32:
        continue
    ioctl_calls, ioctl_ns, open_calls, open_ns = struct.unpack("<4Q", data[:32])
    ioctls += ioctl_calls
    opens += open_calls
    total_ns += ioctl_ns + open_ns
    max_ns = max(max_ns, ioctl_ns + open_ns)
print(ioctls, opens, f"{total_ns / 1e6:.3f}", f"{max_ns / 1e6:.3f}")
