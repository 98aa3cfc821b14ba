// The running node's defaults for a doctor Context (see context.h).
#include "doctor/context.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/utsname.h>

extern char** environ;

namespace gdrproxy::doctor {
namespace {

std::vector<std::string> getifaddrs_ipv4(const std::string& netdev) {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || netdev != a->ifa_name) continue;
    char buf[INET_ADDRSTRLEN] = {};
    const auto* sin = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if (inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf)) out.emplace_back(buf);
  }
  freeifaddrs(list);
  return out;
}

}  // namespace

std::map<std::string, std::string> parse_environ(const std::string& bytes) {
  std::map<std::string, std::string> env;
  size_t start = 0;
  while (start < bytes.size()) {
    size_t end = bytes.find('\0', start);
    if (end == std::string::npos) end = bytes.size();
    std::string entry = bytes.substr(start, end - start);
    if (size_t eq = entry.find('='); eq != std::string::npos && eq > 0)
      env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
    start = end + 1;
  }
  return env;
}

Context node_context() {
  Context c;
  for (char** e = environ; e && *e; ++e) {
    std::string entry = *e;
    if (size_t eq = entry.find('='); eq != std::string::npos && eq > 0)
      c.env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  if (auto it = c.env.find("HOME"); it != c.env.end()) c.home = it->second;
  c.ipv4_of = getifaddrs_ipv4;
  utsname u{};
  if (::uname(&u) == 0) c.kernel_release = u.release;
  return c;
}

}  // namespace gdrproxy::doctor
