// A device number as the kernel takes it from user space. mknod(2) and the device cgroup see a
// 32-bit dev_t: a 12-bit major and a 20-bit minor (include/linux/kdev_t.h), and a runtime that
// packs a larger number silently drops the high bits, so 4097:11 becomes the node 1:11. A number
// beyond these limits therefore names some other device once made, and is refused, never mapped.
#pragma once

#include <cstdint>

namespace gdrproxy::proxy {

inline constexpr uint64_t kMaxDeviceMajor = (uint64_t{1} << 12) - 1;  // 4095
inline constexpr uint64_t kMaxDeviceMinor = (uint64_t{1} << 20) - 1;  // 1048575

}  // namespace gdrproxy::proxy
