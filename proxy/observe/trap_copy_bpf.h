// The compiled trap_copy.bpf.c object, embedded at build time.
#pragma once

#include <cstddef>

namespace gdrproxy::proxy {
extern const unsigned char kTrapCopyBpf[];
extern const std::size_t kTrapCopyBpfSize;
}  // namespace gdrproxy::proxy
