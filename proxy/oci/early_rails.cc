// The rails moved while the runtime creates the container (see early_rails.h).
#include "proxy/oci/early_rails.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/error.h"
#include "base/escape.h"
#include "base/file_io.h"
#include "base/lists.h"
#include "base/owner_file.h"
#include "base/unique_fd.h"
#include "netns/netns_fd.h"
#include "netns/restore.h"
#include "proxy/oci/container_rails.h"

namespace gdrproxy::proxy {
namespace {

// In the container's rail directory: the mover's lock (kEarlyMoveFile), held while it works, and
// then its word ("ok", or "error: <cause>"); and its log (what the hook would have written to the
// runtime).
constexpr const char* kEarlyMoveLog = "early-move.log";
// How long the runtime's create may take before the mover gives the rails back, and how long
// `start` waits for the mover.
constexpr int kCreateLimitMs = 600 * 1000;
constexpr auto kStartWait = std::chrono::seconds(60);

std::string who_of(const std::string& id) {
  return "container " + printable(id);
}

// Closes every descriptor but stdio and `keep`.
void close_all_but(std::initializer_list<int> keep) {
  int hi = 2;
  for (int k : keep) hi = std::max(hi, k);
  for (int fd = 3; fd <= hi; ++fd)
    if (std::find(keep.begin(), keep.end(), fd) == keep.end()) ::close(fd);
  ::syscall(SYS_close_range, static_cast<unsigned>(hi + 1), ~0u, 0u);
}

// Waits until the process behind `pidfd` (the runtime's create) has exited.
bool wait_exit(int pidfd, int limit_ms) {
  pollfd p{pidfd, POLLIN, 0};
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n == 1) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

// The mover's work once the rails are in: the container's process, named by the runtime's pid
// file once its create has ended, must be in the namespace the rails went to; it then owns them.
void adopt_container(const EarlyRailsRequest& r, const std::string& dir, int runtime_pidfd,
                     const struct stat& target, bool& created) {
  const std::string who = who_of(r.id);
  if (!wait_exit(runtime_pidfd, kCreateLimitMs)) {
    created = true;  // it may still make one: the directory stays, and `start` is refused
    throw Error(who + ": the runtime's create did not end within " +
                std::to_string(kCreateLimitMs / 1000) + " s");
  }
  const auto text = read_text(r.pid_file, 64);
  char* end = nullptr;
  const long pid = text ? std::strtol(text->c_str(), &end, 10) : 0;
  if (pid <= 0) throw Error(who + ": the runtime's create failed (no pid in " + r.pid_file + ")");
  created = true;
  const UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0)));
  const std::string started = process_start_time(static_cast<pid_t>(pid));
  struct stat ns {};
  const bool in_target = ::stat(("/proc/" + std::to_string(pid) + "/ns/net").c_str(), &ns) == 0 &&
                         ns.st_dev == target.st_dev && ns.st_ino == target.st_ino;
  const bool alive = pidfd && ::syscall(SYS_pidfd_send_signal, pidfd.get(), 0, nullptr, 0) == 0 &&
                     !started.empty();
  if (!alive) throw Error(who + ": its process " + std::to_string(pid) + " is gone");
  if (!in_target)
    throw Error(who + ": its process " + std::to_string(pid) +
                " is not in the network namespace its bundle names (" + printable(r.netns_path) +
                ")");
  write_owner_file(dir + "/" + kRailOwnerFile, {static_cast<pid_t>(pid), started});
}

[[noreturn]] void run_mover(const EarlyRailsRequest& r, const std::string& dir, int lock_fd,
                            int runtime_pidfd, const struct stat& target) {
  ::setsid();
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  const int log_fd = ::open((dir + "/" + kEarlyMoveLog).c_str(),
                            O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  ::dup2(null_fd, 0);
  ::dup2(log_fd >= 0 ? log_fd : null_fd, 1);
  ::dup2(log_fd >= 0 ? log_fd : null_fd, 2);
  close_all_but({lock_fd, runtime_pidfd});
  std::string word = "ok";
  ContainerRailMove c;
  c.who = who_of(r.id);
  c.move.ifaces = r.rails;
  c.move.profile = r.profile;
  c.move.journal = dir + "/netns-" + join_list(r.rails, "+") + ".journal";
  c.move.target_path = r.netns_path;
  c.allow_plain_rails = r.allow_plain_rails;
  bool moved = false;
  bool created = true;  // the runtime's create ended with a container
  try {
    // The mover holds the rails until the container does: should it die, the sweep gives them
    // back.
    write_owner_file(dir + "/" + kRailOwnerFile, {::getpid(), process_start_time(::getpid())});
    const auto began = std::chrono::steady_clock::now();
    const auto ms_since = [&] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::steady_clock::now() - began)
          .count();
    };
    move_container_rails(c, std::cerr);
    moved = true;
    const auto moved_ms = ms_since();
    created = false;
    adopt_container(r, dir, runtime_pidfd, target, created);
    // When a start waits: the move's own time, and when runc's create let the rails be handed on.
    std::cerr << "gdrproxy runtime: rails " << printable(join_list(r.rails)) << " moved in "
              << moved_ms << " ms; the container's process holds them " << ms_since()
              << " ms after the move began\n";
  } catch (const std::exception& e) {
    word = std::string("error: ") + e.what();
    if (moved) {
      // A journal that cannot be given back stays, for poststop or the sweep to try again.
      int problems = 1;
      try {
        problems = netns::restore_command(c.move.journal, std::cerr);
      } catch (const std::exception& x) {
        std::cerr << "gdrproxy runtime: " << x.what() << "\n";
      }
      if (problems == 0) {
        ::unlink(c.move.journal.c_str());
        ::unlink((c.move.journal + ".done").c_str());
      }
      word += problems == 0 ? "; rails given back"
                            : "; rails not all given back (journal " + c.move.journal + ")";
    }
    std::cerr << "gdrproxy runtime: " << word << "\n";
  }
  std::cerr.flush();
  if (::pwrite(lock_fd, word.data(), word.size(), 0) != static_cast<ssize_t>(word.size()))
    ::ftruncate(lock_fd, 0);  // an empty word reads as the mover's death: `start` is refused
  if (!created) {
    // No container, so no `start` to tell and no poststop: the directory goes now (its
    // restorer waits for no mover once this one has let go).
    ::flock(lock_fd, LOCK_UN);
    try {
      restore_rails_dir(dir);
    } catch (const std::exception& e) {
      std::cerr << "gdrproxy runtime: " << e.what() << "\n";
    }
  }
  ::_exit(0);
}

}  // namespace

std::string bundle_network_namespace_path(const std::string& spec) {
  const auto j = nlohmann::json::parse(spec, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return {};
  const auto linux_it = j.find("linux");
  if (linux_it == j.end() || !linux_it->is_object()) return {};
  const auto nss = linux_it->find("namespaces");
  if (nss == linux_it->end() || !nss->is_array()) return {};
  for (const auto& ns : *nss)
    if (ns.is_object() && ns.value("type", "") == "network" && ns.contains("path") &&
        ns["path"].is_string())
      return ns["path"].get<std::string>();
  return {};
}

void begin_early_rails_move(const EarlyRailsRequest& r) {
  const std::string who = who_of(r.id);
  if (r.rails.empty()) throw Error(who + ": no rails to move");
  // The namespace now: a path that is no network namespace fails the create with its cause.
  struct stat target {};
  {
    const netns::NetnsFd ns = netns::NetnsFd::open_path(r.netns_path);
    if (::fstat(ns.fd(), &target) != 0) throw_errno(who + ": " + printable(r.netns_path), errno);
  }
  const std::string dir = make_container_rails_dir(r.state_dir, r.id, who);
  const std::string lock = dir + "/" + kEarlyMoveFile;
  const UniqueFd lfd(
      ::open(lock.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!lfd)
    throw Error(who + ": " + lock + ": " + std::strerror(errno) +
                (errno == EEXIST ? " (its rails are being moved already, or an earlier move was "
                                   "never given back: gdrproxy hook poststop --id ID)"
                                 : ""));
  const UniqueFd self(static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0)));
  if (!self || ::flock(lfd.get(), LOCK_EX) != 0) {
    ::unlink(lock.c_str());
    throw_errno(who + ": cannot start the move of its rails", errno);
  }
  // Twice forked: the mover is no child of the runtime this process becomes, and the runtime's
  // caller (a containerd shim, a subreaper) reaps it.
  const pid_t first = ::fork();
  if (first == 0) {
    if (::fork() == 0) run_mover(r, dir, lfd.get(), self.get(), target);
    ::_exit(0);
  }
  int status = 0;
  while (first > 0 && ::waitpid(first, &status, 0) < 0 && errno == EINTR) {
  }
  if (first < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    ::unlink(lock.c_str());
    throw Error(who + ": cannot start the move of its rails");
  }
}

bool await_early_rails_move(const std::string& state_dir, const std::string& id) {
  const std::string dir = container_rails_dir(state_dir, id);
  const std::string path = dir + "/" + kEarlyMoveFile;
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) {
    if (errno == ENOENT || errno == ENOTDIR) return false;
    throw_errno(who_of(id) + ": " + path, errno);
  }
  const auto deadline = std::chrono::steady_clock::now() + kStartWait;
  while (::flock(fd.get(), LOCK_SH | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) throw_errno(who_of(id) + ": " + path, errno);
    if (std::chrono::steady_clock::now() > deadline)
      throw Error(who_of(id) + ": its rails are not in place " +
                  std::to_string(std::chrono::seconds(kStartWait).count()) +
                  " s after its create (the mover still works; see " + dir + "/" + kEarlyMoveLog +
                  ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  char buf[4096];
  const ssize_t n = ::pread(fd.get(), buf, sizeof buf, 0);
  const std::string word(buf, n > 0 ? static_cast<size_t>(n) : 0);
  if (word == "ok") return true;
  if (word.rfind("error: ", 0) == 0) throw Error(word.substr(7));
  throw Error(who_of(id) + ": the move of its rails ended without a word (its mover died; see " +
              dir + "/" + kEarlyMoveLog + "): its rails are given back at its delete");
}

}  // namespace gdrproxy::proxy
