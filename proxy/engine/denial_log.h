// Denial lines on stderr, one per (process, device, reason): a program that retries a refused
// open or ioctl gets one line that says why, and the repeats are only counted (shown by --stats
// and in the closing note), so a real denial is never lost in a flood of identical ones.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <tuple>

namespace gdrproxy::proxy {

class DenialLog {
 public:
  // Whether this denial is the first of its kind and should be printed. Counts it either way.
  bool first(uint32_t tgid, const std::string& device, const std::string& reason);
  uint64_t total() const { return total_; }
  uint64_t repeats() const { return repeats_; }

 private:
  // Past this many distinct kinds every denial is printed: memory stays bounded, nothing hides.
  static constexpr size_t kMaxKinds = 4096;
  std::set<std::tuple<uint32_t, std::string, std::string>> seen_;
  uint64_t total_ = 0;
  uint64_t repeats_ = 0;
};

}  // namespace gdrproxy::proxy
