// libFuzzer target for the open broker's path rewriting (proxy/broker/open_broker.h):
// rewrite_self_paths, split_magic_dir_path and own_fd_link_number, the pure string steps that
// turn the path a tenant spelled (/proc/self/fd/3/x, /dev/stdin, /proc/thread-self/cwd/..) into
// what the broker resolves for it. Every byte of the path is the tenant's.
//
// Input: byte 0 picks the caller's (ns_tgid, ns_tid) (three fixed pairs, or the next 8 bytes raw)
// and a prefix put before the path (none, /proc/self/, /proc/thread-self/, /dev/fd/, the caller's
// /proc/<tgid>/ or /proc/<tgid>/task/<tid>/), so that the interesting forms are reached at once;
// the rest is the path.
//
// A bug is: any crash, sanitizer report or exception (std::stoi on the fd number must never
// throw, whatever its digits); a rewrite that is not "one known prefix replaced by the caller's
// own /proc directory, the rest kept byte for byte" (or the path unchanged); a split whose
// (dirfd, rest) does not rebuild exactly the path it came from, whose fd is not the number the
// digits spell, or which misses a well-formed cwd/root/fd path; an fd number that is not the
// path's digit tail.
#include <fcntl.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "proxy/broker/open_broker.h"

using namespace gdrproxy::proxy;

namespace {

[[noreturn]] void fail(const char* what, const std::string& path) {
  std::fprintf(stderr, "path_fuzz: %s (path of %zu bytes)\n", what, path.size());
  std::abort();
}

bool starts_with(const std::string& s, const std::string& p) {
  return s.compare(0, p.size(), p) == 0;
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// The specification of rewrite_self_paths, written out independently.
std::string expected_rewrite(const std::string& path, uint32_t tgid, uint32_t tid) {
  const std::string proc = "/proc/" + std::to_string(tgid) + "/";
  if (starts_with(path, "/proc/self/")) return proc + path.substr(11);
  if (starts_with(path, "/proc/thread-self/"))
    return proc + "task/" + std::to_string(tid) + "/" + path.substr(18);
  if (starts_with(path, "/dev/fd/")) return proc + "fd/" + path.substr(8);
  if (path == "/dev/stdin") return proc + "fd/0";
  if (path == "/dev/stdout") return proc + "fd/1";
  if (path == "/dev/stderr") return proc + "fd/2";
  return path;
}

// The caller's own directory that `path` is under (thread form first, as the broker does), or "".
std::string own_base(const std::string& path, uint32_t tgid, uint32_t tid) {
  const std::string process = "/proc/" + std::to_string(tgid) + "/";
  const std::string thread = process + "task/" + std::to_string(tid) + "/";
  if (starts_with(path, thread)) return thread;
  if (starts_with(path, process)) return process;
  return "";
}

void check_split(const std::string& path, uint32_t tgid, uint32_t tid) {
  const auto m = split_magic_dir_path(path, tgid, tid);
  const std::string base = own_base(path, tgid, tid);
  const std::string tail = base.empty() ? "" : path.substr(base.size());
  if (!m) {
    // Completeness: the well-formed forms are always split.
    if (base.empty()) return;
    for (const char* head : {"cwd", "root"}) {
      const size_t n = std::strlen(head);
      if (tail == head || (starts_with(tail, head) && tail.size() > n && tail[n] == '/'))
        fail("a well-formed cwd/root path was not split", path);
    }
    if (starts_with(tail, "fd/")) {
      const size_t slash = tail.find('/', 3);
      if (slash != std::string::npos && slash - 3 <= 9 && all_digits(tail.substr(3, slash - 3)))
        fail("a well-formed fd/N/ path was not split", path);
    }
    return;
  }
  if (base.empty()) fail("split a path outside the caller's /proc directory", path);
  // Soundness: (dirfd, rest) rebuilds the path exactly.
  std::string head;
  if (m->dirfd == AT_FDCWD) {
    head = "cwd";
  } else if (m->dirfd == kMagicRootDir) {
    head = "root";
  } else {
    if (m->dirfd < 0 || m->dirfd > 999999999) fail("fd number out of range", path);
    if (!starts_with(tail, "fd/")) fail("an fd split of a path without fd/", path);
    const size_t slash = tail.find('/', 3);
    if (slash == std::string::npos) fail("an fd split without a slash after the number", path);
    const std::string digits = tail.substr(3, slash - 3);
    if (!all_digits(digits) || digits.size() > 9) fail("fd digits malformed", path);
    if (std::strtol(digits.c_str(), nullptr, 10) != m->dirfd) fail("fd is not its digits", path);
    head = "fd/" + digits;
  }
  const bool rebuilt = tail == head + "/" + m->rest || (m->rest == "." && tail == head);
  if (!rebuilt) fail("(dirfd, rest) does not rebuild the path", path);
}

void check_fd_number(const std::string& path, uint32_t tgid, uint32_t tid) {
  const auto n = own_fd_link_number(path, tgid, tid);
  const std::string base = own_base(path, tgid, tid);
  const std::string tail = base.empty() ? "" : path.substr(base.size());
  const bool form = starts_with(tail, "fd/") && all_digits(tail.substr(3));
  if (!n) {
    if (form) fail("a well-formed fd/N path gave no number", path);
    return;
  }
  if (!form || *n != tail.substr(3)) fail("fd number is not the path's digit tail", path);
}

void check(const std::string& path, uint32_t tgid, uint32_t tid) {
  const std::string r = rewrite_self_paths(path, tgid, tid);
  if (r != expected_rewrite(path, tgid, tid)) fail("rewrite differs from its specification", path);
  for (const std::string* p : {&path, &r}) {
    check_split(*p, tgid, tid);
    check_fd_number(*p, tgid, tid);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool once = [] {
    // The largest fd numbers the splitter accepts, and one digit more: std::stoi must not throw.
    check("/proc/1/fd/999999999/x", 1, 1);
    check("/proc/1/fd/9999999999/x", 1, 1);
    check("/proc/4294967295/task/4294967295/fd/2147483648/", 4294967295u, 4294967295u);
    return true;
  }();
  (void)once;
  if (size == 0) return 0;
  const uint8_t sel = data[0];
  ++data;
  --size;
  uint32_t tgid = 1, tid = 1;
  switch (sel & 3) {
    case 1:
      tgid = 412, tid = 7;
      break;
    case 2:
      tgid = 7, tid = 4127;
      break;
    case 3:
      if (size >= 8) {
        std::memcpy(&tgid, data, 4);
        std::memcpy(&tid, data + 4, 4);
        data += 8;
        size -= 8;
      }
      break;
  }
  std::string prefix;
  switch ((sel >> 2) % 6) {
    case 1:
      prefix = "/proc/self/";
      break;
    case 2:
      prefix = "/proc/thread-self/";
      break;
    case 3:
      prefix = "/dev/fd/";
      break;
    case 4:
      prefix = "/proc/" + std::to_string(tgid) + "/";
      break;
    case 5:
      prefix = "/proc/" + std::to_string(tgid) + "/task/" + std::to_string(tid) + "/";
      break;
  }
  const std::string path = prefix + std::string(reinterpret_cast<const char*>(data), size);
  try {
    check(path, tgid, tid);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "path_fuzz: threw %s\n", e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "path_fuzz: threw a non-std exception\n");
    std::abort();
  }
  return 0;
}
