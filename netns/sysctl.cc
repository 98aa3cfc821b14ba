// Reading and writing net.ipv4.conf.<if>.* (see sysctl.h).
#include "netns/sysctl.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "base/error.h"
#include "base/unique_fd.h"

namespace gdrproxy::netns {
namespace {

std::string conf_path(const std::string& ifname, const std::string& key) {
  if (ifname.find('/') != std::string::npos || key.find('/') != std::string::npos)
    throw Error("bad sysctl name " + ifname + "/" + key);
  return "/proc/sys/net/ipv4/conf/" + ifname + "/" + key;
}

}  // namespace

const std::vector<std::string>& journaled_sysctl_keys() {
  static const std::vector<std::string> keys = {"arp_announce", "arp_ignore", "arp_filter",
                                                "rp_filter"};
  return keys;
}

int read_conf_sysctl(const std::string& ifname, const std::string& key) {
  std::string path = conf_path(ifname, key);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw_errno("cannot read " + path, errno);
  char buf[32] = {};
  ssize_t n = ::read(fd.get(), buf, sizeof(buf) - 1);
  if (n <= 0) throw_errno("cannot read " + path, n < 0 ? errno : EIO);
  return std::stoi(buf);
}

void write_conf_sysctl(const std::string& ifname, const std::string& key, int value) {
  std::string path = conf_path(ifname, key);
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) throw_errno("cannot write " + path, errno);
  std::string text = std::to_string(value) + "\n";
  ssize_t n = ::write(fd.get(), text.data(), text.size());
  if (n != static_cast<ssize_t>(text.size()))
    throw_errno("cannot write " + path, n < 0 ? errno : EIO);
}

}  // namespace gdrproxy::netns
