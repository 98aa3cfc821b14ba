// The NVIDIA comparisons of the seccomp filter, checked against the ABI tables. The idea not to
// miss: the driver dispatches on (number, size) and ignores the type byte and direction bits, so
// every request the driver would run as a known escape must match some comparison whatever its
// type and direction, while ordinary requests of other drivers mostly must not.
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <termios.h>

#include "proxy/abi/nvidia_abi.h"
#include "proxy/sandbox/notify_filter.h"

namespace gdrproxy::proxy {
namespace {

uint32_t ioc(uint32_t dir, uint32_t type, uint32_t nr, uint32_t size) {
  return (dir << 30) | (size << 16) | (type << 8) | nr;
}

bool trapped(uint32_t request) {
  static const std::vector<IoctlMatch> m = nvidia_frontend_matches();
  for (const IoctlMatch& x : m)
    if (x.matches(request)) return true;
  return false;
}

TEST(NvidiaFilter, EveryKnownEscapeIsTrappedWhateverItsTypeAndDirection) {
  for (const NvidiaDriverAbi* abi : nvidia_known_abis()) {
    for (const NvEscape& e : abi->escapes) {
      // The sizes the driver takes: the struct's (two for RM_ALLOC), any multiple of an array
      // element, anything where no size is fixed.
      std::vector<uint32_t> sizes;
      if (e.elem_size) {
        sizes.push_back(e.elem_size);
        sizes.push_back(8u * e.elem_size);
      } else if (e.param_size) {
        sizes.push_back(e.param_size);
        if (e.alt_param_size) sizes.push_back(e.alt_param_size);
      } else {
        for (uint32_t s : {0u, 8u, 4096u}) sizes.push_back(s);
      }
      for (uint32_t size : sizes)
        for (uint32_t type : {0x46u, 0x00u, 0x47u, 0x1bu, 0xffu})
          for (uint32_t dir : {0u, 1u, 2u, 3u})
            EXPECT_TRUE(trapped(ioc(dir, type, e.nr, size)))
                << abi->version << " " << e.name << " size " << size << " type " << type;
    }
  }
}

TEST(NvidiaFilter, RmAllocTakesBothParameterSizes) {
  EXPECT_TRUE(trapped(ioc(3, 0x47, 0x2b, 48)));  // NVOS64
  EXPECT_TRUE(trapped(ioc(3, 0x00, 0x2b, 32)));  // NVOS21
}

TEST(NvidiaFilter, CanonicalTypeCatchesEscapesNoTableNames) {
  EXPECT_TRUE(trapped(ioc(3, 0x46, 0x99, 24)));
}

TEST(NvidiaFilter, OrdinaryRequestsOfOtherDriversAreNotTrapped) {
  for (uint32_t r : {uint32_t{TCGETS}, uint32_t{TIOCGWINSZ}, uint32_t{FIONBIO}, uint32_t{FIOCLEX},
                     uint32_t{FIONREAD}, uint32_t{TIOCGPTN}, 0x8927u /* SIOCGIFHWADDR */})
    EXPECT_FALSE(trapped(r)) << std::hex << r;
}

}  // namespace
}  // namespace gdrproxy::proxy
