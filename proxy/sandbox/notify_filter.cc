// Installs `gdrproxy run`'s two seccomp filters from the rule lists of notify_rules.h.
#include "proxy/sandbox/notify_filter.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "proxy/sandbox/ioctl_allow_bpf.h"

namespace gdrproxy::proxy {
namespace {

struct Ctx {
  scmp_filter_ctx ctx;
  ~Ctx() { seccomp_release(ctx); }
};

void check(int rc, const char* what) {
  if (rc < 0) throw_errno(std::string("seccomp filter: ") + what, -rc);
}

// Adds `rules` to `ctx`: refused ones with their errno, trapped ones as SCMP_ACT_NOTIFY.
void add_rules(scmp_filter_ctx ctx, const std::vector<SyscallRule>& rules) {
  for (const SyscallRule& r : rules) {
    const int nr = seccomp_syscall_resolve_name(r.syscall.c_str());
    if (nr == __NR_SCMP_ERROR) throw Error("seccomp filter: no syscall " + r.syscall);
    const uint32_t action = r.errno_value ? SCMP_ACT_ERRNO(r.errno_value) : SCMP_ACT_NOTIFY;
    const int rc = r.arg ? seccomp_rule_add(ctx, action, nr, 1,
                                            SCMP_CMP(r.arg->index, SCMP_CMP_MASKED_EQ, r.arg->mask,
                                                     r.arg->value))
                         : seccomp_rule_add(ctx, action, nr, 0);
    check(rc, r.syscall.c_str());
  }
}

// Answers with errno, never notifies: for calls no sandbox makes, or none may make here.
void install_refusal_filter(const FilterOptions& options) {
  Ctx c{seccomp_init(SCMP_ACT_ALLOW)};
  if (!c.ctx) throw Error("seccomp_init failed");
  check(seccomp_attr_set(c.ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(ENOSYS)), "badarch");
  add_rules(c.ctx, refusal_rules(options));
  check(seccomp_load(c.ctx), "load refusals");
}

// Loads the notify filter and returns its listener. libseccomp 2.5 cannot ask for
// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, so the filter is exported as BPF and loaded with
// seccomp(2): once the supervisor has received a call, only a fatal signal interrupts the
// caller's wait. Without it a signal (Go's SIGURG preemption, timers) withdraws a call being
// handled and the restarted call is handled again (a brokered open twice). Kernels before 5.19
// lack the flag: the filter is then loaded without it. `allowed_ioctls` go in front, as a
// block that falls through to libseccomp's program for every other call.
int load_with_listener(scmp_filter_ctx ctx, const std::vector<uint32_t>& allowed_ioctls) {
  std::vector<sock_filter> prog = ioctl_allow_block(allowed_ioctls);
  const size_t block = prog.size();
  {
    const UniqueFd mfd(::memfd_create("gdrproxy-filter", MFD_CLOEXEC));
    if (!mfd) throw_errno("memfd_create", errno);
    const int rc = seccomp_export_bpf(ctx, mfd.get());
    const off_t size = rc == 0 ? ::lseek(mfd.get(), 0, SEEK_END) : -1;
    if (size > 0 && size % sizeof(sock_filter) == 0) {
      prog.resize(block + static_cast<size_t>(size) / sizeof(sock_filter));
      if (::pread(mfd.get(), prog.data() + block, static_cast<size_t>(size), 0) != size)
        prog.resize(block);
    }
  }
  if (prog.size() == block) throw Error("seccomp filter: export failed");
  if (prog.size() > BPF_MAXINSNS) throw Error("seccomp filter: longer than BPF_MAXINSNS");
  sock_fprog fprog{static_cast<unsigned short>(prog.size()), prog.data()};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) throw_errno("no_new_privs", errno);
  long fd =
      ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &fprog);
  if (fd < 0 && errno == EINVAL)
    fd = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &fprog);
  if (fd < 0) throw_errno("seccomp load", errno);
  UniqueFd listener(static_cast<int>(fd));
  if (::fcntl(listener.get(), F_SETFD, FD_CLOEXEC) != 0) throw Error("seccomp: listener fd", errno);
  return listener.release();
}

}  // namespace

int install_notify_filter(const FilterOptions& options) {
  install_refusal_filter(options);
  Ctx c{seccomp_init(SCMP_ACT_ALLOW)};
  if (!c.ctx) throw Error("seccomp_init failed");
  // Foreign-ABI syscalls (i386, x32) would bypass the x86-64 rules: refuse them.
  check(seccomp_attr_set(c.ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(ENOSYS)), "badarch");

  add_rules(c.ctx, notify_rules(options));
  return load_with_listener(c.ctx, options.kernel_allowed_ioctls);
}

}  // namespace gdrproxy::proxy
