// The one owner of a file descriptor in gdrproxy: a UniqueFd closes the descriptor it holds
// exactly once (on destruction, reset or move-assignment), never throws, and leaves errno as it
// found it, so `UniqueFd fd(open(...)); if (!fd) ... errno ...` and error paths that unwind past an
// owner still report the errno of the call that failed.
#pragma once

#include <unistd.h>

#include <cerrno>

namespace gdrproxy {

class UniqueFd {
 public:
  UniqueFd() noexcept = default;
  // Takes ownership of `fd` (a negative value holds nothing).
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    reset(other.release());
    return *this;
  }
  ~UniqueFd() { reset(); }

  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }

  // Gives up ownership without closing: the caller now owns the returned descriptor.
  [[nodiscard]] int release() noexcept {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

  // Closes the held descriptor (unless it is `fd` itself) and takes ownership of `fd`.
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0 && fd_ != fd) {
      int saved = errno;
      ::close(fd_);
      errno = saved;
    }
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace gdrproxy
