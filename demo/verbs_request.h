// An RDMA_VERBS_IOCTL request built the way libibverbs lays it out: the header followed by its
// attributes, each with the data word the kernel expects for its kind. Used by every tool of ours
// that issues real uverbs ioctls (the exerciser, the CUDA dma-buf probe, test clients and the
// latency benchmark), so they all speak the same, uapi-exact bytes.
#pragma once

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

namespace gdrproxy::demo {

class VerbsRequest {
 public:
  VerbsRequest(uint16_t object, uint16_t method) : object_(object), method_(method) {}

  // A scalar carried inline in the data word (len <= 8); len 0 for handles.
  VerbsRequest& inline_u64(uint16_t id, uint64_t v, uint16_t len = 8) {
    attrs_.push_back(make(id, len, v));
    return *this;
  }
  // A buffer the kernel reads from or writes to.
  VerbsRequest& ptr(uint16_t id, void* p, uint16_t len) {
    attrs_.push_back(make(id, len, reinterpret_cast<uintptr_t>(p)));
    return *this;
  }
  VerbsRequest& handle(uint16_t id, uint64_t h) { return inline_u64(id, h, 0); }
  VerbsRequest& fd(uint16_t id, int fd) { return inline_u64(id, static_cast<uint32_t>(fd), 4); }

  // The request bytes; `length_fix` corrupts the header's length on purpose (tests).
  const std::vector<uint8_t>& bytes(int length_fix = 0) {
    buf_.resize(sizeof(ib_uverbs_ioctl_hdr) + attrs_.size() * sizeof(ib_uverbs_attr));
    ib_uverbs_ioctl_hdr hdr{};
    hdr.object_id = object_;
    hdr.method_id = method_;
    hdr.num_attrs = static_cast<uint16_t>(attrs_.size());
    hdr.length = static_cast<uint16_t>(buf_.size() + length_fix);
    std::memcpy(buf_.data(), &hdr, sizeof hdr);
    if (!attrs_.empty())
      std::memcpy(buf_.data() + sizeof hdr, attrs_.data(), attrs_.size() * sizeof(ib_uverbs_attr));
    return buf_;
  }

  // Issues the ioctl; returns 0 or -errno. `cmd_high` sets request bits the kernel ignores.
  int issue(int fd, int length_fix = 0, uint64_t cmd_high = 0) {
    bytes(length_fix);
    const long rc = ::syscall(SYS_ioctl, fd, uint64_t{RDMA_VERBS_IOCTL} | cmd_high, buf_.data());
    return rc == 0 ? 0 : -errno;
  }

 private:
  static ib_uverbs_attr make(uint16_t id, uint16_t len, uint64_t data) {
    ib_uverbs_attr a{};
    a.attr_id = id;
    a.len = len;
    a.data = data;
    return a;
  }
  uint16_t object_, method_;
  std::vector<ib_uverbs_attr> attrs_;
  std::vector<uint8_t> buf_;
};

// INVOKE_WRITE of a legacy command with its request and (optional) response struct.
template <typename In, typename Out>
int invoke_write(int fd, uint32_t cmd, In& in, Out* out) {
  VerbsRequest r(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE);
  r.ptr(UVERBS_ATTR_CORE_IN, &in, sizeof in);
  if (out) r.ptr(UVERBS_ATTR_CORE_OUT, out, sizeof *out);
  r.inline_u64(UVERBS_ATTR_WRITE_CMD, cmd, sizeof(uint32_t));
  return r.issue(fd);
}

// MR.REG_DMABUF_MR of `length` bytes of the dma-buf `dmabuf_fd` (-1: NCCL's capability probe).
inline int reg_dmabuf_mr(int fd, int dmabuf_fd, uint64_t length, uint64_t cmd_high = 0) {
  return VerbsRequest(UVERBS_OBJECT_MR, UVERBS_METHOD_REG_DMABUF_MR)
      .handle(UVERBS_ATTR_REG_DMABUF_MR_HANDLE, 0)
      .inline_u64(UVERBS_ATTR_REG_DMABUF_MR_OFFSET, 0)
      .inline_u64(UVERBS_ATTR_REG_DMABUF_MR_LENGTH, length)
      .fd(UVERBS_ATTR_REG_DMABUF_MR_FD, dmabuf_fd)
      .issue(fd, 0, cmd_high);
}

}  // namespace gdrproxy::demo
