// Reading the caller's memory. Decoders never touch a tracee directly: they go through this
// interface, so the same decoder runs on a live process (process_vm_readv), on a recorded
// buffer (tests, fixtures) and under a fuzzer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace gdrproxy::proxy {

class MemoryReader {
 public:
  virtual ~MemoryReader() = default;
  // Copies exactly out.size() bytes from `addr` in the target's address space. Returns false
  // when any byte is unreadable (unmapped, process gone); `out` is then unspecified.
  virtual bool read(uint64_t addr, std::span<uint8_t> out) const = 0;
};

// A fixed set of byte ranges at chosen addresses: the recorded or synthetic memory of a
// process. Reads that straddle a range's end fail, as they would on an unmapped page.
class BufferMemory final : public MemoryReader {
 public:
  void map(uint64_t addr, std::vector<uint8_t> bytes) { ranges_[addr] = std::move(bytes); }
  bool read(uint64_t addr, std::span<uint8_t> out) const override;

 private:
  std::map<uint64_t, std::vector<uint8_t>> ranges_;
};

}  // namespace gdrproxy::proxy
