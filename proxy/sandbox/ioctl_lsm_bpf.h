// The compiled ioctl_lsm.bpf.c object, embedded at build time.
#pragma once

#include <cstddef>

namespace gdrproxy::proxy {
extern const unsigned char kIoctlLsmBpf[];
extern const std::size_t kIoctlLsmBpfSize;
}  // namespace gdrproxy::proxy
