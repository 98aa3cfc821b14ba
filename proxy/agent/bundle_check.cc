// Reading a bundle's config.json for the agent's check of a handed-over listener: bounded, no
// symlink followed at the file itself, every mismatch named.
#include "proxy/agent/bundle_check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/escape.h"
#include "base/unique_fd.h"

namespace gdrproxy::proxy {
namespace {

constexpr off_t kMaxConfigBytes = 4 << 20;

bool same_socket(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && S_ISSOCK(sa.st_mode) &&
         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace

bool bundle_hands_listener_to(const std::string& bundle, const std::string& socket_path,
                              const std::string& metadata, std::string& why,
                              ProfileUntrapped* untrapped, PodIdentity* pod) {
  const std::string path = bundle + "/config.json";
  const std::string shown = printable(path);
  if (bundle.empty() || bundle[0] != '/') {
    why = "the state names no absolute bundle path (\"" + printable(bundle) + "\")";
    return false;
  }
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) {
    why = "cannot read the bundle's " + shown + ": " + std::strerror(errno);
    return false;
  }
  struct stat st {};
  std::string text;
  if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= kMaxConfigBytes) {
    text.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    text.resize(got);
  } else {
    why = shown + " is not a regular file of at most 4 MiB";
    return false;
  }
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    why = shown + " is not a JSON object";
    return false;
  }
  const auto* seccomp = j.contains("linux") && j["linux"].is_object() &&
                                j["linux"].contains("seccomp") && j["linux"]["seccomp"].is_object()
                            ? &j["linux"]["seccomp"]
                            : nullptr;
  if (!seccomp || !seccomp->contains("listenerPath") || !(*seccomp)["listenerPath"].is_string()) {
    why = shown + " sets no linux.seccomp.listenerPath";
    return false;
  }
  const std::string listener = (*seccomp)["listenerPath"].get<std::string>();
  if (!same_socket(listener, socket_path)) {
    why = shown + " hands its listener to " + printable(listener) + ", not to this agent's " +
          printable(socket_path);
    return false;
  }
  std::string want;
  if (seccomp->contains("listenerMetadata")) {
    if (!(*seccomp)["listenerMetadata"].is_string()) {
      why = shown + ": linux.seccomp.listenerMetadata is not a string";
      return false;
    }
    want = (*seccomp)["listenerMetadata"].get<std::string>();
  }
  if (want != metadata) {
    why = "the runtime sent metadata \"" + printable(metadata) + "\" but " + shown + " says \"" +
          printable(want) + "\"";
    return false;
  }
  if (untrapped) *untrapped = profile_untrapped_ioctls(*seccomp);
  if (pod) *pod = pod_identity_of(j);
  return true;
}

}  // namespace gdrproxy::proxy
