// A runtime binary's features, remembered per binary identity (see runtime_feature_cache.h).
#include "proxy/oci/runtime_feature_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "base/file_io.h"
#include "base/unique_fd.h"

namespace gdrproxy::proxy {

std::string runtime_feature_key(const std::string& feature, const struct stat& st) {
  char id[160];
  std::snprintf(
      id, sizeof id, "%llx-%llx-%llx-%lld.%09ld-%lld.%09ld",
      static_cast<unsigned long long>(st.st_dev), static_cast<unsigned long long>(st.st_ino),
      static_cast<unsigned long long>(st.st_size), static_cast<long long>(st.st_mtim.tv_sec),
      st.st_mtim.tv_nsec, static_cast<long long>(st.st_ctim.tv_sec), st.st_ctim.tv_nsec);
  return feature + "." + id;
}

namespace {

// The directory, when it is a directory of ours that no one else may write.
bool trusted_dir(const std::string& dir) {
  struct stat ds {};
  return ::lstat(dir.c_str(), &ds) == 0 && S_ISDIR(ds.st_mode) && ds.st_uid == ::geteuid() &&
         (ds.st_mode & 022) == 0;
}

}  // namespace

std::optional<bool> cached_runtime_feature(const std::string& dir, const std::string& key) {
  if (!trusted_dir(dir)) return std::nullopt;
  const UniqueFd fd(::open((dir + "/" + key).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid())
    return std::nullopt;
  char c[2] = {};
  if (::read(fd.get(), c, sizeof c) != 2 || c[1] != '\n') return std::nullopt;
  if (c[0] == '1') return true;
  if (c[0] == '0') return false;
  return std::nullopt;
}

void remember_runtime_feature(const std::string& dir, const std::string& key, bool value) {
  ::mkdir(dirname_of(dir).c_str(), 0700);  // missing on a node where no agent ran yet
  ::mkdir(dir.c_str(), 0700);
  if (!trusted_dir(dir)) return;
  const std::string path = dir + "/" + key;
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    const UniqueFd fd(
        ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) return;
    const char line[2] = {value ? '1' : '0', '\n'};
    if (::write(fd.get(), line, sizeof line) != sizeof line) {
      ::unlink(tmp.c_str());
      return;
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) ::unlink(tmp.c_str());
}

}  // namespace gdrproxy::proxy
