#include "proxy/observe/bpf_array_mapping.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gdrproxy::proxy {

bool BpfArrayMapping::map(int map_fd, size_t bytes, bool writable, const char* what,
                          std::string& why) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t len = (bytes + page - 1) / page * page;
  void* at = ::mmap(nullptr, len, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, map_fd, 0);
  if (at == MAP_FAILED) {
    why = std::string("mmap of ") + what + ": " + std::strerror(errno);
    return false;
  }
  at_ = at;
  len_ = len;
  return true;
}

BpfArrayMapping::~BpfArrayMapping() {
  if (at_) ::munmap(at_, len_);
}

}  // namespace gdrproxy::proxy
