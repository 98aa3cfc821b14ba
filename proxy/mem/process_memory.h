// Reads a live process's memory with process_vm_readv: no per-process file to open, cache or
// invalidate when pids are reused. Where anything besides the answer rests on the bytes, the
// supervisor checks SECCOMP_IOCTL_NOTIF_ID_VALID after reading, which proves they came from the
// process that made the call.
//
// The idea not to miss: a read fetches up to kWindow bytes, never past the end of its page, and
// later reads inside those bytes are served from them. A decoder reads a header and then what
// follows it (uverbs' attributes), so one syscall usually serves the whole request; staying in
// the page means the read-ahead never faults in a page the request does not touch. One object
// serves one trapped call: the window is never reused for another, and a primed window holds
// bytes copied during that call only.
#pragma once

#include <sys/types.h>

#include <array>
#include <optional>
#include <string>

#include "proxy/mem/memory_reader.h"

namespace gdrproxy::proxy {

class ProcessMemory final : public MemoryReader {
 public:
  // `ns_spent`, when given, accumulates the time spent in read() (the handler's cost breakdown).
  explicit ProcessMemory(pid_t tid, uint64_t* ns_spent = nullptr) : tid_(tid), ns_(ns_spent) {}
  bool read(uint64_t addr, std::span<uint8_t> out) const override;
  // Bytes of the caller's memory at `addr` already copied during this same call (a trap copy,
  // proxy/observe/trap_copy.h): reads inside them are served from them, as from the read-ahead.
  // Referenced, not copied: they must outlive this object.
  void prime(uint64_t addr, std::span<const uint8_t> bytes) {
    primed_addr_ = addr;
    primed_ = bytes;
  }
  // Whether any read went to the process (a primed window serves reads without it): bytes that
  // all came from a trap copy were copied in the caller's own context during this call, so they
  // need no SECCOMP_IOCTL_NOTIF_ID_VALID to prove where they came from.
  bool read_remotely() const { return read_remotely_; }
  // A NUL-terminated string of at most `max` bytes (e.g. a path); nullopt if unreadable or
  // unterminated.
  std::optional<std::string> read_string(uint64_t addr, size_t max = 4096) const;

 private:
  static constexpr size_t kWindow = 512;
  bool read_remote(uint64_t addr, void* to, size_t len, size_t* got) const;

  pid_t tid_;
  uint64_t* ns_;
  mutable std::array<uint8_t, kWindow> window_;
  mutable uint64_t window_addr_ = 0;
  mutable size_t window_len_ = 0;
  mutable bool read_remotely_ = false;
  uint64_t primed_addr_ = 0;
  std::span<const uint8_t> primed_;
};

}  // namespace gdrproxy::proxy
