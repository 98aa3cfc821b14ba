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
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

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

constexpr uint32_t kNrMask = 0x000000ff;
constexpr uint32_t kNrSizeMask = 0x3fff00ff;  // _IOC_NR and _IOC_SIZE; type and dir ignored
constexpr uint32_t kTypeMask = 0x0000ff00;

// Answers with errno, never notifies: for calls no sandbox makes, or none may make here.
void install_refusal_filter(const FilterOptions& options) {
  Ctx c{seccomp_init(SCMP_ACT_ALLOW)};
  if (!c.ctx) throw std::runtime_error("seccomp_init failed");
  check(seccomp_attr_set(c.ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(ENOSYS)), "badarch");
  // A page nobody serves would block the supervisor's reads of the caller's memory for good.
  check(seccomp_rule_add(c.ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(userfaultfd), 0), "userfaultfd");
  // An open by inode (root with CAP_DAC_READ_SEARCH) may land outside the root of the mount it
  // is decoded in; Landlock then judges it by that mount's root, which for a device node
  // bind-mounted on its own (stand-ins, container runtimes' per-device binds) is a granted node.
  // Device work never needs it.
  check(seccomp_rule_add(c.ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(open_by_handle_at), 0),
        "open_by_handle_at");
  if (options.refuse_unbrokered_opens) {
    // Without a kernel check of device ioctls, the broker is the only guard of an open: refuse
    // the opens it never sees (io_uring), and those it cannot decide race-free (openat2 keeps
    // its flags in caller memory; access mode 3 needs no Landlock right).
    // ENOSYS makes io_uring and openat2 users fall back to plain calls.
    check(seccomp_rule_add(c.ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0), "openat2");
    check(seccomp_rule_add(c.ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(open), 1,
                           SCMP_A1(SCMP_CMP_MASKED_EQ, O_ACCMODE, O_ACCMODE)),
          "open mode 3");
    check(seccomp_rule_add(c.ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(openat), 1,
                           SCMP_A2(SCMP_CMP_MASKED_EQ, O_ACCMODE, O_ACCMODE)),
          "openat mode 3");
  }
  if (options.refuse_unbrokered_opens || options.refuse_io_uring)
    check(seccomp_rule_add(c.ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(io_uring_setup), 0),
          "io_uring_setup");
  check(seccomp_load(c.ctx), "load refusals");
}

// Loads the notify filter and returns its listener. libseccomp 2.5 cannot ask for
// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, so the filter is exported as BPF and loaded with
// seccomp(2): once the supervisor has received a call, only a fatal signal interrupts the
// caller's wait. Without it a signal (Go's SIGURG preemption, timers) withdraws a call being
// handled and the restarted call is handled again (a brokered open twice). Kernels before 5.19
// lack the flag: the filter is then loaded without it.
int load_with_listener(scmp_filter_ctx ctx) {
  const int mfd = ::memfd_create("gdrproxy-filter", MFD_CLOEXEC);
  if (mfd < 0) throw std::runtime_error(std::string("memfd_create: ") + std::strerror(errno));
  std::vector<sock_filter> prog;
  const int rc = seccomp_export_bpf(ctx, mfd);
  const off_t size = rc == 0 ? ::lseek(mfd, 0, SEEK_END) : -1;
  if (size > 0 && size % sizeof(sock_filter) == 0) {
    prog.resize(static_cast<size_t>(size) / sizeof(sock_filter));
    if (::pread(mfd, prog.data(), static_cast<size_t>(size), 0) != size) prog.clear();
  }
  ::close(mfd);
  if (prog.empty() || prog.size() > BPF_MAXINSNS)
    throw std::runtime_error("seccomp filter: export failed");
  sock_fprog fprog{static_cast<unsigned short>(prog.size()), prog.data()};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    throw std::runtime_error(std::string("no_new_privs: ") + std::strerror(errno));
  long fd =
      ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &fprog);
  if (fd < 0 && errno == EINVAL)
    fd = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &fprog);
  if (fd < 0) throw std::runtime_error(std::string("seccomp load: ") + std::strerror(errno));
  if (::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC) != 0) {
    ::close(static_cast<int>(fd));
    throw std::runtime_error("seccomp: listener fd");
  }
  return static_cast<int>(fd);
}

void trap_ioctl(const Ctx& c, IoctlMatch m, const char* what) {
  check(seccomp_rule_add(c.ctx, SCMP_ACT_NOTIFY, SCMP_SYS(ioctl), 1,
                         SCMP_A1(SCMP_CMP_MASKED_EQ, m.mask, m.value)),
        what);
}

}  // namespace

std::vector<IoctlMatch> nvidia_frontend_matches() {
  std::vector<IoctlMatch> out{{kTypeMask, uint32_t{kNvIoctlType} << 8}};
  auto add = [&](IoctlMatch m) {
    if (std::none_of(out.begin(), out.end(),
                     [&](const IoctlMatch& o) { return o.mask == m.mask && o.value == m.value; }))
      out.push_back(m);
  };
  for (const NvidiaDriverAbi* abi : nvidia_known_abis()) {
    for (const NvEscape& e : abi->escapes) {
      // Arrays (CARD_INFO, ATTACH_GPUS_TO_FD) and escapes whose size no table fixes: any size.
      if (e.elem_size != 0 || e.param_size == 0) {
        add({kNrMask, e.nr});
        continue;
      }
      add({kNrSizeMask, (uint32_t{e.param_size} << 16) | e.nr});
      if (e.alt_param_size) add({kNrSizeMask, (uint32_t{e.alt_param_size} << 16) | e.nr});
    }
  }
  // A number-only comparison makes the size-keyed ones of the same number redundant.
  std::vector<uint32_t> any_size;
  for (const IoctlMatch& m : out)
    if (m.mask == kNrMask) any_size.push_back(m.value);
  std::erase_if(out, [&](const IoctlMatch& m) {
    return m.mask == kNrSizeMask &&
           std::find(any_size.begin(), any_size.end(), m.value & kNrMask) != any_size.end();
  });
  return out;
}

int install_notify_filter(const FilterOptions& options) {
  install_refusal_filter(options);
  Ctx c{seccomp_init(SCMP_ACT_ALLOW)};
  if (!c.ctx) throw std::runtime_error("seccomp_init failed");
  // Foreign-ABI syscalls (i386, x32) would bypass the x86-64 rules: refuse them.
  check(seccomp_attr_set(c.ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(ENOSYS)), "badarch");

  trap_ioctl(c, {kTypeMask, uint32_t{uverbs::kIoctlType} << 8}, "ioctl uverbs");
  for (const IoctlMatch& m : nvidia_frontend_matches()) trap_ioctl(c, m, "ioctl nvidia");
  // UVM uses raw numbers: small ones (1..80 today), plus INITIALIZE/DEINITIALIZE...
  trap_ioctl(c, {0xffffff00, 0}, "ioctl uvm");
  // ...and UVM_IS_8_SUPPORTED (2047), above the small range.
  for (uint32_t raw : {0x7ffu, 0x30000001u, 0x30000002u})
    trap_ioctl(c, {0xffffffff, raw}, "ioctl uvm init");

  if (options.trap_pidfd_getfd)
    check(seccomp_rule_add(c.ctx, SCMP_ACT_NOTIFY, SCMP_SYS(pidfd_getfd), 0), "pidfd_getfd");
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
  return load_with_listener(c.ctx);
}

}  // namespace gdrproxy::proxy
