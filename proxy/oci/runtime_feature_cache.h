// What a runtime binary was found to support, remembered per binary. The idea not to miss: an
// answer is keyed by the binary's identity (device, inode, size, mtime, ctime), so an upgraded or
// replaced runtime is scanned afresh and never inherits its predecessor's answer; the cache lives
// in a root-owned directory, and an entry that is a link, not ours, or unreadable counts as absent.
// The shim runs at every container create: scanning runc's 9 MB for a flag name took about 6 ms
// there, a cache hit a stat and a read.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <optional>
#include <string>

namespace gdrproxy::proxy {

// Past this many entries a new answer clears the others (a cache, not a record).
inline constexpr size_t kMaxRuntimeFeatureEntries = 32;

// The entry's name for `feature` of the binary `st` describes.
std::string runtime_feature_key(const std::string& feature, const struct stat& st);
// The remembered answer in `dir`, or nullopt (none, or one we do not trust).
std::optional<bool> cached_runtime_feature(const std::string& dir, const std::string& key);
// Remembers an answer, best effort (a directory we cannot make or write only costs the next
// create a scan). `dir` and its parent are made 0700 when missing.
void remember_runtime_feature(const std::string& dir, const std::string& key, bool value);

}  // namespace gdrproxy::proxy
