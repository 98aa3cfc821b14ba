// A runtime binary's features, remembered per binary identity (see runtime_feature_cache.h).
#include "proxy/oci/runtime_feature_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "base/file_io.h"
#include "base/owned_dir.h"
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

std::optional<bool> cached_runtime_feature(const std::string& dir, const std::string& key) {
  const UniqueFd dfd = open_owned_dir(dir);
  if (!dfd) return std::nullopt;
  const std::optional<std::string> line = read_owned_entry(dfd.get(), key, 3);
  if (line == "1\n") return true;
  if (line == "0\n") return false;
  return std::nullopt;
}

void remember_runtime_feature(const std::string& dir, const std::string& key, bool value) {
  ::mkdir(dirname_of(dir).c_str(), 0700);  // missing on a node where no agent ran yet
  ::mkdir(dir.c_str(), 0700);
  const UniqueFd dfd = open_owned_dir(dir);
  if (!dfd || !replace_owned_entry(dfd.get(), key, value ? "1\n" : "0\n")) return;
  // Bounded: past kMaxRuntimeFeatureEntries (runtimes upgraded many times, or test stand-ins) the
  // cache starts again from this answer. Only a miss lists the directory.
  const std::vector<std::string> names = list_dir(dir);
  if (names.size() > kMaxRuntimeFeatureEntries)
    for (const std::string& n : names)
      if (n != key) ::unlinkat(dfd.get(), n.c_str(), 0);
}

}  // namespace gdrproxy::proxy
