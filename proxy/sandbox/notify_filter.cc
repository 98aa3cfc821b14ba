#include "proxy/sandbox/notify_filter.h"

#include <fcntl.h>
#include <seccomp.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "proxy/abi/nvidia_abi.h"
#include "proxy/abi/uverbs_abi.h"

namespace gdrproxy::proxy {
namespace {

struct Ctx {
  scmp_filter_ctx ctx;
  ~Ctx() { seccomp_release(ctx); }
};

void check(int rc, const char* what) {
  if (rc < 0)
    throw std::runtime_error(std::string("seccomp filter: ") + what + ": " + std::strerror(-rc));
}

}  // namespace

int install_notify_filter(const FilterOptions& options) {
  Ctx c{seccomp_init(SCMP_ACT_ALLOW)};
  if (!c.ctx) throw std::runtime_error("seccomp_init failed");
  // Foreign-ABI syscalls (i386, x32) would bypass the x86-64 rules: refuse them.
  check(seccomp_attr_set(c.ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(ENOSYS)), "badarch");

  constexpr uint64_t kTypeMask = 0xff00;
  check(seccomp_rule_add(c.ctx, SCMP_ACT_NOTIFY, SCMP_SYS(ioctl), 1,
                         SCMP_A1(SCMP_CMP_MASKED_EQ, kTypeMask, uint64_t{uverbs::kIoctlType} << 8)),
        "ioctl uverbs");
  check(seccomp_rule_add(c.ctx, SCMP_ACT_NOTIFY, SCMP_SYS(ioctl), 1,
                         SCMP_A1(SCMP_CMP_MASKED_EQ, kTypeMask, uint64_t{kNvIoctlType} << 8)),
        "ioctl nvidia");
  // UVM uses raw numbers: small ones (1..80 today), plus INITIALIZE/DEINITIALIZE...
  check(seccomp_rule_add(c.ctx, SCMP_ACT_NOTIFY, SCMP_SYS(ioctl), 1,
                         SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffff00, 0)),
        "ioctl uvm");
  // ...and UVM_IS_8_SUPPORTED (2047), above the small range.
  for (uint64_t raw : {0x7ffull, 0x30000001ull, 0x30000002ull})
    check(seccomp_rule_add(c.ctx, SCMP_ACT_NOTIFY, SCMP_SYS(ioctl), 1,
                           SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffff, raw)),
          "ioctl uvm init");

  if (options.rdma_cm_fd_base >= 0) {
    check(seccomp_rule_add(c.ctx, SCMP_ACT_NOTIFY, SCMP_SYS(write), 1,
                           SCMP_A0(SCMP_CMP_MASKED_EQ, 0xfffffff0,
                                   static_cast<uint64_t>(options.rdma_cm_fd_base))),
          "write rdma_cm");
  }
  if (options.open_trap == OpenTrap::kAllOpens) {
    for (int nr : {SCMP_SYS(open), SCMP_SYS(openat), SCMP_SYS(creat), SCMP_SYS(openat2)})
      check(seccomp_rule_add(c.ctx, SCMP_ACT_NOTIFY, nr, 0), "open");
  } else {
    for (uint64_t mode : {uint64_t{O_WRONLY}, uint64_t{O_RDWR}, uint64_t{O_ACCMODE}}) {
      check(seccomp_rule_add(c.ctx, SCMP_ACT_NOTIFY, SCMP_SYS(open), 1,
                             SCMP_A1(SCMP_CMP_MASKED_EQ, O_ACCMODE, mode)),
            "open");
      check(seccomp_rule_add(c.ctx, SCMP_ACT_NOTIFY, SCMP_SYS(openat), 1,
                             SCMP_A2(SCMP_CMP_MASKED_EQ, O_ACCMODE, mode)),
            "openat");
    }
    // creat() always opens for writing; openat2 keeps its flags in a struct the filter can't see.
    check(seccomp_rule_add(c.ctx, SCMP_ACT_NOTIFY, SCMP_SYS(creat), 0), "creat");
    check(seccomp_rule_add(c.ctx, SCMP_ACT_NOTIFY, SCMP_SYS(openat2), 0), "openat2");
  }
  check(seccomp_load(c.ctx), "load");
  // Keep our own descriptor: the library's copy belongs to its context.
  int fd = fcntl(seccomp_notify_fd(c.ctx), F_DUPFD_CLOEXEC, 3);
  if (fd < 0) throw std::runtime_error("seccomp: no listener fd");
  return fd;
}

}  // namespace gdrproxy::proxy
