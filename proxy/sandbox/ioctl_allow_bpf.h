// A cBPF block that lets a sorted set of exact ioctl requests run in the kernel, placed in front
// of the filter libseccomp builds. The idea not to miss: libseccomp cannot order an ALLOW of one
// request before a NOTIFY that also matches it (a catch-all such as "type 'F'" or "UVM numbers
// 0-255"), and of two stacked filters the stricter action wins, so the exceptions must come
// first in the same program. The block only jumps forward: a call it does not allow falls
// through to the first instruction after it, untouched, as if the block were not there. It
// compares the low 32 bits of the request, as the filter's other ioctl comparisons do, because
// the kernel truncates the request to an unsigned int.
#pragma once

#include <linux/filter.h>

#include <cstdint>
#include <span>
#include <vector>

namespace gdrproxy::proxy {

// The block for `sorted_requests` (ascending, unique; at most kMaxKernelAllowedIoctls). Empty
// input gives an empty block. It checks the architecture first: a call of another ABI falls
// through to the program after it, which refuses it.
std::vector<sock_filter> ioctl_allow_block(std::span<const uint32_t> sorted_requests);

inline constexpr size_t kMaxKernelAllowedIoctls = 1024;

}  // namespace gdrproxy::proxy
