// Soft-RoCE devices through RDMA netlink (see soft_roce.h).
#include "netns/soft_roce.h"

#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "proxy/base/error.h"
#include "proxy/base/unique_fd.h"

namespace gdrproxy::netns {
namespace {

struct Attr {
  uint16_t type;
  std::vector<uint8_t> data;
};

Attr str_attr(uint16_t type, const std::string& s) {
  Attr a{type, std::vector<uint8_t>(s.begin(), s.end())};
  a.data.push_back(0);
  return a;
}

Attr u32_attr(uint16_t type, uint32_t v) {
  Attr a{type, std::vector<uint8_t>(sizeof v)};
  std::memcpy(a.data.data(), &v, sizeof v);
  return a;
}

// One reply message's attributes, by type (the last one of a type wins).
using Attrs = std::vector<Attr>;

const Attr* find_attr(const Attrs& attrs, uint16_t type) {
  const Attr* found = nullptr;
  for (const auto& a : attrs)
    if (a.type == type) found = &a;
  return found;
}

std::string attr_str(const Attrs& attrs, uint16_t type) {
  const Attr* a = find_attr(attrs, type);
  if (!a) return "";
  const auto* p = reinterpret_cast<const char*>(a->data.data());
  return std::string(p, strnlen(p, a->data.size()));
}

uint32_t attr_u32(const Attrs& attrs, uint16_t type) {
  const Attr* a = find_attr(attrs, type);
  uint32_t v = 0;
  if (a && a->data.size() >= sizeof v) std::memcpy(&v, a->data.data(), sizeof v);
  return v;
}

// Sends one RDMA_NL_NLDEV request on a fresh NETLINK_RDMA socket of the calling thread's
// namespace and returns the attributes of each reply message. An error reply throws, naming
// `what`, or with `error` set is stored there instead; a dump ends at NLMSG_DONE, another request
// at its acknowledgement.
std::vector<Attrs> nldev(uint16_t op, uint16_t flags, const std::vector<Attr>& attrs,
                         const std::string& what, int* error = nullptr) {
  UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA));
  if (!fd) throw_errno(what + ": socket(NETLINK_RDMA) (is ib_core loaded?)", errno);
  timeval tv{2, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::vector<uint8_t> msg(NLMSG_HDRLEN);
  for (const auto& a : attrs) {
    nlattr h{};
    h.nla_len = static_cast<uint16_t>(NLA_HDRLEN + a.data.size());
    h.nla_type = a.type;
    const size_t at = msg.size();
    msg.resize(at + NLA_ALIGN(h.nla_len));
    std::memcpy(msg.data() + at, &h, sizeof h);
    std::memcpy(msg.data() + at + NLA_HDRLEN, a.data.data(), a.data.size());
  }
  nlmsghdr h{};
  h.nlmsg_len = static_cast<uint32_t>(msg.size());
  h.nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op);
  h.nlmsg_flags = static_cast<uint16_t>(NLM_F_REQUEST | NLM_F_ACK | flags);
  h.nlmsg_seq = 1;
  std::memcpy(msg.data(), &h, sizeof h);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd.get(), msg.data(), msg.size(), 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof kernel) < 0)
    throw_errno(what + ": RDMA netlink send", errno);
  std::vector<Attrs> out;
  std::vector<uint8_t> buf(1 << 16);
  for (int rounds = 0; rounds < 1024; ++rounds) {
    ssize_t n = ::recv(fd.get(), buf.data(), buf.size(), 0);
    if (n < 0) throw_errno(what + ": RDMA netlink reply", errno);
    size_t off = 0;
    while (off + sizeof(nlmsghdr) <= static_cast<size_t>(n)) {
      nlmsghdr r;
      std::memcpy(&r, buf.data() + off, sizeof r);
      if (r.nlmsg_len < sizeof r || r.nlmsg_len > static_cast<size_t>(n) - off)
        throw Error(what + ": malformed RDMA netlink reply");
      if (r.nlmsg_type == NLMSG_DONE) return out;
      if (r.nlmsg_type == NLMSG_ERROR) {
        int err = 0;
        if (r.nlmsg_len >= sizeof r + sizeof err)
          std::memcpy(&err, buf.data() + off + sizeof r, sizeof err);
        if (err != 0 && error) {
          *error = -err;
          return out;
        }
        if (err != 0) throw_errno(what, -err);
        if (!(flags & NLM_F_DUMP)) return out;  // the acknowledgement
      } else {
        Attrs msg_attrs;
        size_t a = off + NLMSG_HDRLEN;
        const size_t end = off + r.nlmsg_len;
        while (a + sizeof(nlattr) <= end) {
          nlattr at;
          std::memcpy(&at, buf.data() + a, sizeof at);
          if (at.nla_len < sizeof at || at.nla_len > end - a)
            throw Error(what + ": malformed RDMA netlink attribute");
          const uint8_t* p = buf.data() + a + NLA_HDRLEN;
          msg_attrs.push_back({static_cast<uint16_t>(at.nla_type & NLA_TYPE_MASK),
                               std::vector<uint8_t>(p, p + at.nla_len - NLA_HDRLEN)});
          a += NLA_ALIGN(at.nla_len);
        }
        out.push_back(std::move(msg_attrs));
      }
      off += NLMSG_ALIGN(r.nlmsg_len);
    }
  }
  throw Error(what + ": RDMA netlink reply too long");
}

// Device names and indexes. Without ib_core the kernel has no RDMA netlink family, and no RDMA
// device to list: none, not an error (a host whose rails are plain netdevs).
std::vector<std::pair<std::string, unsigned>> rdma_devices() {
  std::vector<std::pair<std::string, unsigned>> out;
  if (!UniqueFd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA)) &&
      errno == EPROTONOSUPPORT)
    return out;
  for (const auto& m : nldev(RDMA_NLDEV_CMD_GET, NLM_F_DUMP, {}, "listing RDMA devices"))
    out.emplace_back(attr_str(m, RDMA_NLDEV_ATTR_DEV_NAME), attr_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX));
  return out;
}

std::string first_line(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  return line;
}

}  // namespace

std::vector<RdmaPortNetdev> rdma_port_netdevs() {
  std::vector<RdmaPortNetdev> out;
  for (const auto& [name, index] : rdma_devices()) {
    std::vector<Attrs> ports;
    try {
      ports = nldev(RDMA_NLDEV_CMD_PORT_GET, NLM_F_DUMP,
                    {u32_attr(RDMA_NLDEV_ATTR_DEV_INDEX, index)}, "ports of RDMA device " + name);
    } catch (const Error&) {
      continue;  // unregistered between the two requests
    }
    for (const auto& m : ports) {
      RdmaPortNetdev p;
      p.ibdev = name;
      p.dev_index = index;
      p.port = attr_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX);
      p.netdev = attr_str(m, RDMA_NLDEV_ATTR_NDEV_NAME);
      p.ifindex = static_cast<int>(attr_u32(m, RDMA_NLDEV_ATTR_NDEV_INDEX));
      out.push_back(std::move(p));
    }
  }
  return out;
}

std::vector<std::string> soft_roce_devices_on(const std::string& netdev,
                                              const std::string& sysfs_root) {
  std::vector<std::string> out;
  const std::filesystem::path cls = std::filesystem::path(sysfs_root) / "class" / "infiniband";
  std::error_code none;
  if (!std::filesystem::exists(cls, none)) return out;  // no RDMA device at all
  for (const auto& p : rdma_port_netdevs()) {
    if (p.netdev != netdev) continue;
    std::error_code ec;
    const auto dir = cls / p.ibdev;
    if (first_line(dir / "parent") != netdev || std::filesystem::exists(dir / "device", ec))
      continue;
    if (std::find(out.begin(), out.end(), p.ibdev) == out.end()) out.push_back(p.ibdev);
  }
  return out;
}

bool ensure_soft_roce(const std::string& ibdev, const std::string& netdev, int wait_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  const std::string what =
      "making soft-RoCE device " + ibdev + " on " + netdev + " (rdma link add)";
  for (;;) {
    bool here = false;
    for (const auto& p : rdma_port_netdevs())
      here = here || (p.ibdev == ibdev && p.netdev == netdev);
    if (here) return false;
    // The old device leaves the listing before it lets go: until then the kernel answers ENFILE
    // (its name is still taken) or EEXIST (rxe still counts it as configured on the netdev),
    // depending on how far its unregistration has gone.
    int error = 0;
    nldev(RDMA_NLDEV_CMD_NEWLINK, 0,
          {str_attr(RDMA_NLDEV_ATTR_DEV_NAME, ibdev), str_attr(RDMA_NLDEV_ATTR_LINK_TYPE, "rxe"),
           str_attr(RDMA_NLDEV_ATTR_NDEV_NAME, netdev)},
          what, &error);
    if (error == 0) return true;
    if (error != ENFILE && error != EEXIST) throw_errno(what, error);
    if (std::chrono::steady_clock::now() >= deadline)
      throw Error(what + ": " +
                  (error == ENFILE ? "the name is still taken"
                                   : "an rxe device is still configured on " + netdev) +
                  " " + std::to_string(wait_ms) + " ms after " + netdev +
                  " moved (the old device does not go away)");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace gdrproxy::netns
