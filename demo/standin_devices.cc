#include "demo/standin_devices.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "base/error.h"
#include "base/unique_fd.h"

namespace gdrproxy::demo {
namespace {

namespace fs = std::filesystem;

void check(int rc, const std::string& what) {
  if (rc != 0) throw_errno("stand-in /dev: " + what, errno);
}

void bind(const fs::path& src, const fs::path& dst) {
  std::error_code ec;
  struct stat st;
  if (::stat(src.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    fs::create_directories(dst, ec);
  } else {
    fs::create_directories(dst.parent_path(), ec);
    const UniqueFd mount_point(::open(dst.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
  }
  check(::mount(src.c_str(), dst.c_str(), nullptr, MS_BIND | MS_REC, nullptr),
        "bind " + src.string() + " -> " + dst.string());
}

}  // namespace

const std::vector<StandinDevice>& standin_devices() {
  static const std::vector<StandinDevice> kDevices = {
      {"infiniband/uverbs0", "/dev/zero"}, {"infiniband/uverbs1", "/dev/full"},
      {"infiniband/rdma_cm", "/dev/fuse"}, {"nvidiactl", "/dev/random"},
      {"nvidia0", "/dev/urandom"},         {"nvidia1", "/dev/kmsg"},
      {"nvidia-uvm", "/dev/loop-control"},
  };
  return kDevices;
}

void enter_standin_dev() {
  check(::unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)");
  check(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), "make / private");
  // Hold every entry of the real /dev by an O_PATH fd, cover /dev with a tmpfs, then rebuild it
  // from those fds (bind mounts through /proc/self/fd), leaving the host's /dev untouched.
  struct Entry {
    fs::path dst;
    UniqueFd fd;
    fs::path symlink;
  };
  std::vector<Entry> entries;
  std::error_code ec;
  auto is_source = [](const fs::path& p) {
    for (const auto& d : standin_devices())
      if (fs::path(d.source) == p) return true;
    return false;
  };
  // Directories that will hold stand-ins are rebuilt entry by entry, never bound whole: a
  // placeholder created inside a bound host directory would land in the host's /dev.
  auto holds_standin = [](const fs::path& name) {
    for (const auto& d : standin_devices())
      if (fs::path(d.name).parent_path() == name) return true;
    return false;
  };
  for (const auto& e : fs::directory_iterator("/dev", ec)) {
    const fs::path& p = e.path();
    if (e.is_symlink(ec)) {
      entries.push_back({p.filename(), UniqueFd(), fs::read_symlink(p, ec)});
    } else if (holds_standin(p.filename()) && e.is_directory(ec)) {
      for (const auto& c : fs::directory_iterator(p, ec))
        entries.push_back({p.filename() / c.path().filename(),
                           UniqueFd(::open(c.path().c_str(), O_PATH | O_CLOEXEC)),
                           {}});
    } else if (!is_source(p)) {
      entries.push_back({p.filename(), UniqueFd(::open(p.c_str(), O_PATH | O_CLOEXEC)), {}});
    }
  }
  for (const auto& d : standin_devices()) {
    struct stat st;
    // A host that has the real device keeps it (a GPU machine gets stand-in NICs only).
    if (::stat(("/dev/" + d.name).c_str(), &st) == 0) continue;
    if (::stat(d.source.c_str(), &st) == 0 && S_ISCHR(st.st_mode))
      entries.push_back({d.name, UniqueFd(::open(d.source.c_str(), O_PATH | O_CLOEXEC)), {}});
  }
  check(::mount("tmpfs", "/dev", "tmpfs", MS_NOSUID, "mode=755"), "tmpfs on /dev");
  for (auto& e : entries) {
    const fs::path dst = fs::path("/dev") / e.dst;
    if (!e.symlink.empty()) {
      fs::create_symlink(e.symlink, dst, ec);
    } else if (e.fd) {
      bind("/proc/self/fd/" + std::to_string(e.fd.get()), dst);
      e.fd.reset();
    }
  }
}

}  // namespace gdrproxy::demo
