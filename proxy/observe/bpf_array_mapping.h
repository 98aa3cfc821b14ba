// A BPF array map created with BPF_F_MMAPABLE, mapped into this process: its slots are read and
// written with plain loads and stores, no bpf() call per access (the trap copies, the exit
// observer's pending slots). The idea not to miss: the kernel maps whole pages, so the length is
// the slots' bytes rounded up to a page; the mapping keeps the map alive until it is unmapped.
#pragma once

#include <cstddef>
#include <string>

namespace gdrproxy::proxy {

class BpfArrayMapping {
 public:
  BpfArrayMapping() = default;
  ~BpfArrayMapping();
  BpfArrayMapping(const BpfArrayMapping&) = delete;
  BpfArrayMapping& operator=(const BpfArrayMapping&) = delete;

  // Maps the first `bytes` of the map behind `map_fd`, writable or read-only; false (and `why`,
  // naming `what`) where the kernel refuses.
  bool map(int map_fd, size_t bytes, bool writable, const char* what, std::string& why);
  void* data() const { return at_; }

 private:
  void* at_ = nullptr;
  size_t len_ = 0;
};

}  // namespace gdrproxy::proxy
