// See run_dir.h.
#include "harness/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "harness/output.h"

namespace gdrproxy::harness {

namespace fs = std::filesystem;

bool valid_key(const std::string& key) {
  if (key.empty()) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

std::string owner_file_of(const StatePaths& p, const std::string& key) {
  return key == "node" ? p.run_dir + "/owner" : p.run_dir + "/owners/" + key;
}

std::string key_words(const std::string& key) {
  std::string s = key;
  if (const size_t dash = s.find('-'); dash != std::string::npos) s[dash] = ' ';
  return s;
}

std::vector<Owner> owners(const StatePaths& p) {
  std::vector<Owner> out;
  auto add = [&out](const std::string& key, const std::string& file) {
    Owner o{key, file, {}, false};
    if (const auto r = read_owner_file(file)) {
      o.record = *r;
      o.alive = owner_alive(*r);
    }
    out.push_back(std::move(o));
  };
  std::error_code ec;
  if (fs::is_regular_file(p.run_dir + "/owner", ec)) add("node", p.run_dir + "/owner");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(p.run_dir + "/owners", ec))
    if (e.is_regular_file(ec)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  for (const auto& n : names) add(n, p.run_dir + "/owners/" + n);
  return out;
}

std::vector<pid_t> alive_owner_pids(const StatePaths& p) {
  std::vector<pid_t> out;
  for (const auto& o : owners(p))
    if (o.alive) out.push_back(o.record.pid);
  return out;
}

void RunLock::acquire(int seconds) {
  if (held()) return;
  const Identity& id = id_;
  std::error_code ec;
  fs::create_directories(id.paths.state, ec);
  const std::string path = id.paths.state + "/run.lock";
  fd_ = UniqueFd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd_) throw Failure("cannot open " + path + ": " + std::strerror(errno), 125);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (::flock(fd_.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR)
      throw Failure("cannot lock " + path + ": " + std::strerror(errno), 125);
    if (std::chrono::steady_clock::now() >= until)
      throw Failure("another run of node " + id.node + " holds " + path + " for " +
                        std::to_string(seconds) + " s",
                    125);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

bool is_mount_point(const std::string& path) {
  struct statx stx {};
  if (::statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx) != 0)
    return false;
  return (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
         (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

}  // namespace gdrproxy::harness
