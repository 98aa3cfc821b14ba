// Errno names (see errno_names.h): glibc's for user-space errnos, the kernel's list for its
// internal codes, "E<n>" for the rest.
#include "proxy/abi/errno_names.h"

#include <array>
#include <cstring>

namespace gdrproxy::proxy {
namespace {

constexpr int kMaxErrno = 4095;  // the kernel's MAX_ERRNO

struct KernelCode {
  int value;
  const char* name;
  const char* meaning;
};

// include/linux/errno.h: codes the kernel uses inside and converts (or should convert) before
// returning to user space. A trace shows them when it records the raw result of a call.
constexpr KernelCode kKernelCodes[] = {
    {512, "ERESTARTSYS", "interrupted by a signal; restarted or turned into EINTR"},
    {513, "ERESTARTNOINTR", "interrupted by a signal; always restarted"},
    {514, "ERESTARTNOHAND", "interrupted by a signal; restarted if no handler ran"},
    {515, "ENOIOCTLCMD", "no such ioctl command (kernel-internal; user space sees ENOTTY)"},
    {516, "ERESTART_RESTARTBLOCK", "interrupted by a signal; restarted through restart_syscall"},
    {517, "EPROBE_DEFER", "driver probe deferred (kernel-internal)"},
    {518, "EOPENSTALE", "open found a stale dentry (kernel-internal; retried)"},
    {519, "ENOPARAM", "no such mount parameter (kernel-internal)"},
    {521, "EBADHANDLE", "illegal NFS file handle (kernel-internal)"},
    {522, "ENOTSYNC", "update synchronisation mismatch (kernel-internal)"},
    {523, "EBADCOOKIE", "cookie is stale (kernel-internal)"},
    {524, "ENOTSUPP", "operation not supported (kernel-internal; should be EOPNOTSUPP)"},
    {525, "ETOOSMALL", "buffer or request is too small (kernel-internal)"},
    {526, "ESERVERFAULT", "an untranslatable error occurred (kernel-internal)"},
    {527, "EBADTYPE", "type not supported by server (kernel-internal)"},
    {528, "EJUKEBOX", "request initiated, but will not complete before timeout (kernel-internal)"},
    {529, "EIOCBQUEUED", "iocb queued, will get completion event (kernel-internal)"},
    {530, "ERECALLCONFLICT", "conflict with recalled state (kernel-internal)"},
    {531, "ENOGRACE", "NFS file lock reclaim refused (kernel-internal)"},
};

const KernelCode* kernel_code(int err) {
  for (const KernelCode& k : kKernelCodes)
    if (k.value == err) return &k;
  return nullptr;
}

// "E<n>" for every number, built once (thread-safe static initialisation).
const char* numbered(int err) {
  static const std::array<std::string, kMaxErrno + 1> names = [] {
    std::array<std::string, kMaxErrno + 1> a;
    for (int i = 0; i <= kMaxErrno; ++i) a[i] = "E" + std::to_string(i);
    return a;
  }();
  return err >= 0 && err <= kMaxErrno ? names[err].c_str() : "E-out-of-range";
}

}  // namespace

const char* errno_name(int err) {
  if (err > 0 && err <= kMaxErrno) {
    if (const char* n = strerrorname_np(err)) return n;
    if (const KernelCode* k = kernel_code(err)) return k->name;
  }
  return numbered(err);
}

std::string errno_meaning(int err) {
  if (const KernelCode* k = kernel_code(err)) return k->meaning;
  if (err > 0 && err <= kMaxErrno && strerrorname_np(err)) return strerrordesc_np(err);
  return "no errno has this number";
}

std::optional<int> errno_by_name(std::string_view name) {
  for (int i = 1; i <= kMaxErrno; ++i)
    if (const char* n = strerrorname_np(i); n && name == n) return i;
  return std::nullopt;
}

bool errno_is_kernel_internal(int err) {
  return kernel_code(err) != nullptr;
}

}  // namespace gdrproxy::proxy
