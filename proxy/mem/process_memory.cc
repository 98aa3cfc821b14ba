#include "proxy/mem/process_memory.h"

#include <sys/uio.h>

#include <time.h>

#include <cstring>
#include <vector>

namespace gdrproxy::proxy {
namespace {

uint64_t now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_nsec);
}

}  // namespace

bool ProcessMemory::read(uint64_t addr, std::span<uint8_t> out) const {
  if (out.empty()) return true;
  iovec local{out.data(), out.size()};
  iovec remote{reinterpret_cast<void*>(addr), out.size()};
  const uint64_t t0 = ns_ ? now_ns() : 0;
  ssize_t n = ::process_vm_readv(tid_, &local, 1, &remote, 1, 0);
  if (ns_) *ns_ += now_ns() - t0;
  return n == static_cast<ssize_t>(out.size());
}

std::optional<std::string> ProcessMemory::read_string(uint64_t addr, size_t max) const {
  // Read page by page: a string near the end of a mapping must not fail because the next page
  // is unmapped.
  std::string s;
  std::vector<uint8_t> buf;
  while (s.size() < max) {
    const uint64_t page_left = 4096 - ((addr + s.size()) & 4095);
    const size_t chunk = std::min<uint64_t>(page_left, max - s.size());
    buf.resize(chunk);
    iovec local{buf.data(), chunk};
    iovec remote{reinterpret_cast<void*>(addr + s.size()), chunk};
    ssize_t n = ::process_vm_readv(tid_, &local, 1, &remote, 1, 0);
    if (n <= 0) return std::nullopt;
    const void* nul = std::memchr(buf.data(), 0, static_cast<size_t>(n));
    if (nul) {
      s.append(reinterpret_cast<const char*>(buf.data()),
               static_cast<const uint8_t*>(nul) - buf.data());
      return s;
    }
    s.append(reinterpret_cast<const char*>(buf.data()), static_cast<size_t>(n));
  }
  return std::nullopt;
}

}  // namespace gdrproxy::proxy
