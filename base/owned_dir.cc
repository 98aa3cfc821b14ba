// Records in a directory of our own (see owned_dir.h).
#include "base/owned_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gdrproxy {

UniqueFd open_owned_dir(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat ds {};
  if (!fd || ::fstat(fd.get(), &ds) != 0 || !S_ISDIR(ds.st_mode) || ds.st_uid != ::geteuid() ||
      (ds.st_mode & 022) != 0)
    return UniqueFd();
  return fd;
}

std::optional<std::string> read_owned_entry(int dfd, const std::string& name, size_t max) {
  const UniqueFd fd(::openat(dfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid())
    return std::nullopt;
  std::string out(max, '\0');
  size_t got = 0;
  while (got < max) {
    const ssize_t n = ::read(fd.get(), out.data() + got, max - got);
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

bool replace_owned_entry(int dfd, const std::string& name, std::string_view content) {
  const std::string tmp = name + ".tmp." + std::to_string(::getpid());
  {
    const UniqueFd fd(
        ::openat(dfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) return false;
    if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
      ::unlinkat(dfd, tmp.c_str(), 0);
      return false;
    }
  }
  if (::renameat(dfd, tmp.c_str(), dfd, name.c_str()) != 0) {
    ::unlinkat(dfd, tmp.c_str(), 0);
    return false;
  }
  return true;
}

}  // namespace gdrproxy
