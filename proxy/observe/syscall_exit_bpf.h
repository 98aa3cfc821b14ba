// The compiled syscall_exit.bpf.c object, embedded at build time.
#pragma once

#include <cstddef>

namespace gdrproxy::proxy {
extern const unsigned char kSyscallExitBpf[];
extern const std::size_t kSyscallExitBpfSize;
}  // namespace gdrproxy::proxy
