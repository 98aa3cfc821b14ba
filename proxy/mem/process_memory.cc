#include "proxy/mem/process_memory.h"

#include <sys/uio.h>

#include <time.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/hot_path.h"

namespace gdrproxy::proxy {
namespace {

uint64_t now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_nsec);
}

}  // namespace

bool ProcessMemory::read_remote(uint64_t addr, void* to, size_t len, size_t* got) const {
  iovec local{to, len};
  iovec remote{reinterpret_cast<void*>(addr), len};
  const uint64_t t0 = ns_ ? now_ns() : 0;
  read_remotely_ = true;
  const ssize_t n = ::process_vm_readv(tid_, &local, 1, &remote, 1, 0);
  if (ns_) *ns_ += now_ns() - t0;
  *got = n > 0 ? static_cast<size_t>(n) : 0;
  return n > 0;
}

GDRPROXY_HOT bool ProcessMemory::read(uint64_t addr, std::span<uint8_t> out) const {
  if (out.empty()) return true;
  if (addr >= primed_addr_ && addr - primed_addr_ <= primed_.size() &&
      out.size() <= primed_.size() - (addr - primed_addr_)) {
    std::memcpy(out.data(), primed_.data() + (addr - primed_addr_), out.size());
    return true;
  }
  if (window_len_ != 0 && addr >= window_addr_ && addr - window_addr_ <= window_len_ &&
      out.size() <= window_len_ - (addr - window_addr_)) {
    std::memcpy(out.data(), window_.data() + (addr - window_addr_), out.size());
    return true;
  }
  const uint64_t page_left = 4096 - (addr & 4095);
  size_t got = 0;
  if (out.size() <= kWindow && out.size() <= page_left) {
    // Read ahead to the end of the page: the bytes past the request are in a page it touches.
    const size_t len = static_cast<size_t>(std::min<uint64_t>(kWindow, page_left));
    if (!read_remote(addr, window_.data(), len, &got) || got < out.size()) return false;
    window_addr_ = addr;
    window_len_ = got;
    std::memcpy(out.data(), window_.data(), out.size());
    return true;
  }
  return read_remote(addr, out.data(), out.size(), &got) && got == out.size();
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
    size_t n = 0;
    if (!read_remote(addr + s.size(), buf.data(), chunk, &n)) return std::nullopt;
    const void* nul = std::memchr(buf.data(), 0, n);
    if (nul) {
      s.append(reinterpret_cast<const char*>(buf.data()),
               static_cast<const uint8_t*>(nul) - buf.data());
      return s;
    }
    s.append(reinterpret_cast<const char*>(buf.data()), n);
  }
  return std::nullopt;
}

}  // namespace gdrproxy::proxy
