// Reads a live process's memory with process_vm_readv: one syscall per read and no per-process
// file to open, cache or invalidate when pids are reused. The supervisor checks
// SECCOMP_IOCTL_NOTIF_ID_VALID after reading, which proves the bytes came from the process that
// made the call.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "proxy/mem/memory_reader.h"

namespace gdrproxy::proxy {

class ProcessMemory final : public MemoryReader {
 public:
  // `ns_spent`, when given, accumulates the time spent in read() (the handler's cost breakdown).
  explicit ProcessMemory(pid_t tid, uint64_t* ns_spent = nullptr) : tid_(tid), ns_(ns_spent) {}
  bool read(uint64_t addr, std::span<uint8_t> out) const override;
  // A NUL-terminated string of at most `max` bytes (e.g. a path); nullopt if unreadable or
  // unterminated.
  std::optional<std::string> read_string(uint64_t addr, size_t max = 4096) const;

 private:
  pid_t tid_;
  uint64_t* ns_;
};

}  // namespace gdrproxy::proxy
