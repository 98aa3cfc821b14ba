// A network namespace held open by file descriptor, and the one way this component runs code
// inside another network namespace.
//
// The idea not to miss: sockets and /proc/sys/net files belong to the namespace that was current
// when they were *opened*. So code that must act inside a namespace runs on a short-lived thread
// that setns()es into it (only that thread changes namespace; the process never does), opens what
// it needs there, and may hand the open socket back: a netlink socket opened in the target keeps
// talking to the target from any thread.
#pragma once

#include <sys/types.h>

#include <exception>
#include <functional>
#include <string>
#include <thread>

#include "base/unique_fd.h"

namespace gdrproxy::netns {

// (device, inode) of an nsfs file: the identity of a namespace while it exists.
struct NetnsId {
  unsigned long dev = 0;
  unsigned long ino = 0;
  bool operator==(const NetnsId&) const = default;
  std::string str() const;
};

class NetnsFd {
 public:
  NetnsFd() = default;
  // Opens a network namespace file (/run/netns/NAME, /proc/PID/ns/net, a bind mount).
  // Throws gdrproxy::Error naming `path` if it cannot be opened or is not a network namespace.
  static NetnsFd open_path(const std::string& path);
  static NetnsFd open_pid(pid_t pid);
  // The namespace of the calling thread.
  static NetnsFd current();

  NetnsFd(NetnsFd&& other) noexcept = default;
  NetnsFd& operator=(NetnsFd&& other) noexcept = default;
  NetnsFd(const NetnsFd&) = delete;
  NetnsFd& operator=(const NetnsFd&) = delete;

  int fd() const { return fd_.get(); }
  bool valid() const { return static_cast<bool>(fd_); }
  const NetnsId& id() const { return id_; }
  const std::string& describe() const { return describe_; }

  // Runs fn() on a thread that has entered this namespace; returns its result and rethrows its
  // exception in the caller.
  template <typename Fn>
  auto run_inside(Fn&& fn) const -> decltype(fn());

 private:
  NetnsFd(UniqueFd fd, std::string describe);
  void enter_on_this_thread() const;

  UniqueFd fd_;
  NetnsId id_;
  std::string describe_;
};

template <typename Fn>
auto NetnsFd::run_inside(Fn&& fn) const -> decltype(fn()) {
  using R = decltype(fn());
  std::exception_ptr error;
  if constexpr (std::is_void_v<R>) {
    std::thread worker([&] {
      try {
        enter_on_this_thread();
        fn();
      } catch (...) {
        error = std::current_exception();
      }
    });
    worker.join();
    if (error) std::rethrow_exception(error);
  } else {
    R result{};
    std::thread worker([&] {
      try {
        enter_on_this_thread();
        result = fn();
      } catch (...) {
        error = std::current_exception();
      }
    });
    worker.join();
    if (error) std::rethrow_exception(error);
    return result;
  }
}

}  // namespace gdrproxy::netns
