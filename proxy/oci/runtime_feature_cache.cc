// A runtime binary's features, remembered per binary identity (see runtime_feature_cache.h).
#include "proxy/oci/runtime_feature_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

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

// The directory, opened without following a link, when it is a directory of ours that no one
// else may write; entries are then opened relative to this descriptor, so the directory checked
// is the one read and written.
UniqueFd trusted_dir(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat ds {};
  if (!fd || ::fstat(fd.get(), &ds) != 0 || !S_ISDIR(ds.st_mode) || ds.st_uid != ::geteuid() ||
      (ds.st_mode & 022) != 0)
    return UniqueFd();
  return fd;
}

}  // namespace

std::optional<bool> cached_runtime_feature(const std::string& dir, const std::string& key) {
  const UniqueFd dfd = trusted_dir(dir);
  if (!dfd) return std::nullopt;
  const UniqueFd fd(::openat(dfd.get(), key.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid())
    return std::nullopt;
  char c[3] = {};
  if (::read(fd.get(), c, sizeof c) != 2 || c[1] != '\n') return std::nullopt;
  if (c[0] == '1') return true;
  if (c[0] == '0') return false;
  return std::nullopt;
}

void remember_runtime_feature(const std::string& dir, const std::string& key, bool value) {
  ::mkdir(dirname_of(dir).c_str(), 0700);  // missing on a node where no agent ran yet
  ::mkdir(dir.c_str(), 0700);
  const UniqueFd dfd = trusted_dir(dir);
  if (!dfd) return;
  const std::string tmp = key + ".tmp." + std::to_string(::getpid());
  {
    const UniqueFd fd(::openat(dfd.get(), tmp.c_str(),
                               O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) return;
    const char line[2] = {value ? '1' : '0', '\n'};
    if (::write(fd.get(), line, sizeof line) != sizeof line) {
      ::unlinkat(dfd.get(), tmp.c_str(), 0);
      return;
    }
  }
  if (::renameat(dfd.get(), tmp.c_str(), dfd.get(), key.c_str()) != 0) {
    ::unlinkat(dfd.get(), tmp.c_str(), 0);
    return;
  }
  // Bounded: past kMaxRuntimeFeatureEntries (runtimes upgraded many times, or test stand-ins) the
  // cache starts again from this answer. Only a miss lists the directory.
  const std::vector<std::string> names = list_dir(dir);
  if (names.size() > kMaxRuntimeFeatureEntries)
    for (const std::string& n : names)
      if (n != key) ::unlinkat(dfd.get(), n.c_str(), 0);
}

}  // namespace gdrproxy::proxy
