// A device number as the kernel keeps it inside (an inode's i_rdev: major << 20 | minor, what BPF
// programs read), in user space's dev_t. The idea not to miss: the two encodings differ, so a
// number a BPF program reports is never compared with stat()'s without this.
#pragma once

#include <sys/sysmacros.h>
#include <sys/types.h>

#include <cstdint>

namespace gdrproxy {

inline dev_t dev_from_kernel(uint32_t kdev) {
  return makedev(kdev >> 20, kdev & 0xfffff);
}

}  // namespace gdrproxy
