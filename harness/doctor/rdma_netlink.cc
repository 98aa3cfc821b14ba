// RDMA netlink view against sysfs (see rdma_netlink.h).
#include "harness/doctor/rdma_netlink.h"

#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "proxy/base/unique_fd.h"
#include "sysfs/fsio.h"

namespace gdrproxy::doctor {
namespace {

std::string joined(const std::set<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

bool request(int fd, uint16_t op, uint16_t flags, uint32_t seq, NldevView& view) {
  nlmsghdr h{};
  h.nlmsg_len = sizeof h;
  h.nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op);
  h.nlmsg_flags = NLM_F_REQUEST | flags;
  h.nlmsg_seq = seq;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd, &h, sizeof h, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) < 0) {
    view.error = std::string("send: ") + std::strerror(errno);
    return false;
  }
  std::vector<uint8_t> buf(1 << 16);
  for (int rounds = 0; rounds < 256; ++rounds) {
    ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n < 0) {
      view.error = std::string("recv: ") + std::strerror(errno);
      return false;
    }
    bool done = false;
    if (!parse_nldev_reply(std::span<const uint8_t>(buf.data(), static_cast<size_t>(n)), view,
                           &done))
      return false;
    // A dump ends with NLMSG_DONE; a plain request has one reply.
    if (done || !(flags & NLM_F_DUMP)) return true;
  }
  view.error = "reply too long";
  return false;
}

}  // namespace

bool parse_nldev_reply(std::span<const uint8_t> bytes, NldevView& view, bool* done) {
  size_t off = 0;
  while (off + sizeof(nlmsghdr) <= bytes.size()) {
    nlmsghdr h;
    std::memcpy(&h, bytes.data() + off, sizeof h);
    if (h.nlmsg_len < sizeof h || h.nlmsg_len > bytes.size() - off) {
      view.error = "malformed netlink message";
      return false;
    }
    if (h.nlmsg_type == NLMSG_DONE) {
      *done = true;
      return true;
    }
    if (h.nlmsg_type == NLMSG_ERROR) {
      int err = 0;
      if (h.nlmsg_len >= sizeof h + sizeof(int))
        std::memcpy(&err, bytes.data() + off + sizeof h, sizeof err);
      if (err != 0) {
        view.error = std::string("kernel: ") + std::strerror(-err);
        return false;
      }
    } else {
      size_t a = off + NLMSG_HDRLEN;
      const size_t end = off + h.nlmsg_len;
      while (a + sizeof(nlattr) <= end) {
        nlattr at;
        std::memcpy(&at, bytes.data() + a, sizeof at);
        if (at.nla_len < sizeof at || at.nla_len > end - a) {
          view.error = "malformed netlink attribute";
          return false;
        }
        const uint8_t* payload = bytes.data() + a + NLA_HDRLEN;
        const size_t len = at.nla_len - NLA_HDRLEN;
        const uint16_t type = at.nla_type & NLA_TYPE_MASK;
        if (type == RDMA_NLDEV_ATTR_DEV_NAME && len > 0) {
          const auto* p = reinterpret_cast<const char*>(payload);
          view.devices.emplace_back(p, strnlen(p, len));
        } else if (type == RDMA_NLDEV_SYS_ATTR_NETNS_MODE && len >= 1) {
          view.netns_mode = payload[0];
        }
        a += NLA_ALIGN(at.nla_len);
      }
    }
    off += NLMSG_ALIGN(h.nlmsg_len);
  }
  return true;
}

NldevView query_nldev() {
  NldevView view;
  UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA));
  if (!fd) {
    view.error = std::string("NETLINK_RDMA socket: ") + std::strerror(errno);
    return view;
  }
  timeval tv{1, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (!request(fd.get(), RDMA_NLDEV_CMD_GET, NLM_F_DUMP, 1, view)) return view;
  std::sort(view.devices.begin(), view.devices.end());
  NldevView sys;
  if (request(fd.get(), RDMA_NLDEV_CMD_SYS_GET, 0, 2, sys)) view.netns_mode = sys.netns_mode;
  view.ok = true;
  return view;
}

void compare_nldev(const Context& ctx, const NldevView& view, Report& report) {
  if (!view.ok) {
    report.warn("rdma.netlink",
                "cannot ask RDMA netlink (" + view.error +
                    "): devices of this network namespace not compared with sysfs",
                "load ib_core (ib_uverbs), or run where RDMA devices exist");
    return;
  }
  const auto listed = sysfs::list_dir(ctx.sysfs_root + "/class/infiniband");
  const std::set<std::string> in_sysfs(listed.begin(), listed.end());
  const std::set<std::string> in_nl(view.devices.begin(), view.devices.end());
  std::set<std::string> only_sysfs, only_nl;
  for (const auto& d : in_sysfs)
    if (!in_nl.count(d)) only_sysfs.insert(d);
  for (const auto& d : in_nl)
    if (!in_sysfs.count(d)) only_nl.insert(d);
  const std::string mode = view.netns_mode == 1   ? "shared"
                           : view.netns_mode == 0 ? "exclusive"
                                                  : "unknown";
  report.facts()["rdma_netns_mode"] = mode;
  if (!only_sysfs.empty())
    report.fail("rdma.netlink",
                "sysfs shows " + joined(only_sysfs) +
                    " that this network namespace's RDMA netlink does not (netns mode " + mode +
                    ")",
                "rebuild the synthetic /sys from the granted devices, or in exclusive mode move "
                "the device here (rdma dev set DEV netns NS)");
  else if (!only_nl.empty())
    report.warn("rdma.netlink",
                "RDMA netlink has " + joined(only_nl) + " that sysfs does not show (netns mode " +
                    mode + "): libibverbs will not find them",
                "include them in the container's sysfs (gdrproxy sysfs build) or drop the grant");
  else
    report.pass("rdma.netlink", std::to_string(in_nl.size()) +
                                    " RDMA device(s) alike in netlink and sysfs; netns mode " +
                                    mode);
}

void check_rdma_netlink(const Context& ctx, Report& report) {
  // Netlink answers for this node only: a captured tree (--sysfs-root) is not compared with it.
  if (ctx.sysfs_root != "/sys") return;
  compare_nldev(ctx, query_nldev(), report);
}

}  // namespace gdrproxy::doctor
