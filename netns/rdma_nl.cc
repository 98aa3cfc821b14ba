// The RDMA netlink client (see rdma_nl.h).
#include "netns/rdma_nl.h"

#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/error.h"

namespace gdrproxy::netns {
namespace {

// A socket of the calling thread's namespace, set up for requests: a receive timeout, and
// error replies that carry the kernel's text (NETLINK_EXT_ACK) but not the whole request back
// (NETLINK_CAP_ACK). Returns the fd, or -errno.
int open_socket() {
  const int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
  if (fd < 0) return -errno;
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const int on = 1;
  // Older kernels lack these; replies are then only shorter.
  ::setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &on, sizeof on);
  ::setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &on, sizeof on);
  return fd;
}

// Attributes from `begin` to `end` of `bytes`; false on one whose length runs past `end`.
bool parse_attrs(std::span<const uint8_t> bytes, size_t begin, size_t end, NlAttrs& out) {
  size_t a = begin;
  while (a + sizeof(nlattr) <= end) {
    nlattr at;
    std::memcpy(&at, bytes.data() + a, sizeof at);
    if (at.nla_len < sizeof at || at.nla_len > end - a) return false;
    const uint8_t* p = bytes.data() + a + NLA_HDRLEN;
    out.push_back({static_cast<uint16_t>(at.nla_type & NLA_TYPE_MASK),
                   std::vector<uint8_t>(p, p + (at.nla_len - NLA_HDRLEN))});
    a += NLA_ALIGN(at.nla_len);
  }
  return true;
}

}  // namespace

NlAttr nl_str(uint16_t type, const std::string& s) {
  NlAttr a{type, std::vector<uint8_t>(s.begin(), s.end())};
  a.data.push_back(0);
  return a;
}

NlAttr nl_u32(uint16_t type, uint32_t v) {
  NlAttr a{type, std::vector<uint8_t>(sizeof v)};
  std::memcpy(a.data.data(), &v, sizeof v);
  return a;
}

NlAttr nl_u8(uint16_t type, uint8_t v) {
  return NlAttr{type, {v}};
}

const NlAttr* nl_find(const NlAttrs& attrs, uint16_t type) {
  const NlAttr* found = nullptr;
  for (const auto& a : attrs)
    if (a.type == type) found = &a;
  return found;
}

std::string nl_get_str(const NlAttrs& attrs, uint16_t type) {
  const NlAttr* a = nl_find(attrs, type);
  if (!a) return "";
  const auto* p = reinterpret_cast<const char*>(a->data.data());
  return std::string(p, strnlen(p, a->data.size()));
}

namespace {
template <typename T>
std::optional<T> get_int(const NlAttrs& attrs, uint16_t type) {
  const NlAttr* a = nl_find(attrs, type);
  if (!a || a->data.size() < sizeof(T)) return std::nullopt;
  T v;
  std::memcpy(&v, a->data.data(), sizeof v);
  return v;
}
}  // namespace

std::optional<uint8_t> nl_get_u8(const NlAttrs& attrs, uint16_t type) {
  return get_int<uint8_t>(attrs, type);
}
std::optional<uint32_t> nl_get_u32(const NlAttrs& attrs, uint16_t type) {
  return get_int<uint32_t>(attrs, type);
}
std::optional<uint64_t> nl_get_u64(const NlAttrs& attrs, uint16_t type) {
  return get_int<uint64_t>(attrs, type);
}

std::vector<uint8_t> nldev_request(uint16_t op, uint16_t flags, uint32_t seq,
                                   const NlAttrs& attrs) {
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
  h.nlmsg_type = static_cast<uint16_t>(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op));
  h.nlmsg_flags = static_cast<uint16_t>(NLM_F_REQUEST | NLM_F_ACK | flags);
  h.nlmsg_seq = seq;
  std::memcpy(msg.data(), &h, sizeof h);
  return msg;
}

bool parse_nldev_reply(std::span<const uint8_t> bytes, uint32_t seq, NldevReply& reply,
                       std::string& why) {
  size_t off = 0;
  while (off + sizeof(nlmsghdr) <= bytes.size()) {
    nlmsghdr h;
    std::memcpy(&h, bytes.data() + off, sizeof h);
    if (h.nlmsg_len < sizeof h || h.nlmsg_len > bytes.size() - off) {
      why = "malformed RDMA netlink message";
      return false;
    }
    const size_t end = off + h.nlmsg_len;
    if (h.nlmsg_seq == seq) {
      if (h.nlmsg_type == NLMSG_DONE) {
        // A dump that failed says so here: its errno (negative) after the header.
        reply.done = true;
        int err = 0;
        if (h.nlmsg_len >= NLMSG_HDRLEN + sizeof err)
          std::memcpy(&err, bytes.data() + off + NLMSG_HDRLEN, sizeof err);
        if (err < 0) reply.error = -err;
      } else if (h.nlmsg_type == NLMSG_ERROR) {
        nlmsgerr e{};
        if (h.nlmsg_len < NLMSG_HDRLEN + sizeof e) {
          why = "malformed RDMA netlink error reply";
          return false;
        }
        std::memcpy(&e, bytes.data() + off + NLMSG_HDRLEN, sizeof e);
        if (e.error == 0) {
          reply.acked = true;
        } else {
          reply.error = -e.error;
          // Extended-ack attributes follow the echoed request: its header only when capped.
          if (h.nlmsg_flags & NLM_F_ACK_TLVS) {
            size_t tlv = off + NLMSG_HDRLEN + sizeof e;
            if (!(h.nlmsg_flags & NLM_F_CAPPED))
              tlv += NLMSG_ALIGN(e.msg.nlmsg_len) - std::min<size_t>(e.msg.nlmsg_len, NLMSG_HDRLEN);
            NlAttrs tlvs;
            if (tlv <= end && parse_attrs(bytes, tlv, end, tlvs))
              reply.error_message = nl_get_str(tlvs, NLMSGERR_ATTR_MSG);
          }
        }
      } else {
        NlAttrs attrs;
        if (!parse_attrs(bytes, off + NLMSG_HDRLEN, end, attrs)) {
          why = "malformed RDMA netlink attribute";
          return false;
        }
        reply.messages.push_back(std::move(attrs));
      }
    }
    off += NLMSG_ALIGN(h.nlmsg_len);
  }
  return true;
}

RdmaNl::RdmaNl() {
  const int fd = open_socket();
  if (fd < 0) throw_errno("socket(NETLINK_RDMA) (is ib_core loaded?)", -fd);
  fd_.reset(fd);
}

std::optional<RdmaNl> RdmaNl::open_if_present() {
  const int fd = open_socket();
  if (fd == -EPROTONOSUPPORT) return std::nullopt;
  if (fd < 0) throw_errno("socket(NETLINK_RDMA)", -fd);
  return RdmaNl(UniqueFd(fd));
}

RdmaNl RdmaNl::open_in(const NetnsFd& ns) {
  const int fd = ns.run_inside([] { return open_socket(); });
  if (fd < 0) throw_errno("socket(NETLINK_RDMA) in " + ns.describe(), -fd);
  return RdmaNl(UniqueFd(fd));
}

std::vector<NlAttrs> RdmaNl::request(uint16_t op, uint16_t flags, const NlAttrs& attrs,
                                     const std::string& what, int* error,
                                     std::string* message) const {
  const uint32_t seq = ++seq_;
  const std::vector<uint8_t> msg = nldev_request(op, flags, seq, attrs);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd_.get(), msg.data(), msg.size(), 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof kernel) < 0)
    throw_errno(what + ": RDMA netlink send", errno);
  NldevReply reply;
  std::vector<uint8_t> buf(1 << 16);
  for (int rounds = 0; rounds < 1024; ++rounds) {
    const ssize_t n = ::recv(fd_.get(), buf.data(), buf.size(), 0);
    if (n < 0) throw_errno(what + ": RDMA netlink reply", errno);
    std::string why;
    if (!parse_nldev_reply(std::span<const uint8_t>(buf.data(), static_cast<size_t>(n)), seq, reply,
                           why))
      throw Error(what + ": " + why);
    if (reply.error != 0) {
      if (!error) throw Error(what + ": " + kernel_reason(reply.error, reply.error_message));
      *error = reply.error;
      if (message) *message = reply.error_message;
      return std::move(reply.messages);
    }
    // A dump ends with NLMSG_DONE (the kernel acknowledges no dump); a request at its ack.
    if (reply.done || reply.acked) {
      if (error) *error = 0;
      return std::move(reply.messages);
    }
  }
  throw Error(what + ": RDMA netlink reply too long");
}

std::string kernel_reason(int error, const std::string& message) {
  std::string out = std::strerror(error);
  if (!message.empty()) out += " (" + message + ")";
  return out;
}

std::vector<RdmaDevice> rdma_devices(const RdmaNl& nl) {
  std::vector<RdmaDevice> out;
  for (const auto& m : nl.request(RDMA_NLDEV_CMD_GET, NLM_F_DUMP, {}, "listing RDMA devices")) {
    RdmaDevice d;
    d.name = nl_get_str(m, RDMA_NLDEV_ATTR_DEV_NAME);
    d.index = nl_get_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX).value_or(0);
    d.node_guid = nl_get_u64(m, RDMA_NLDEV_ATTR_NODE_GUID).value_or(0);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<RdmaPortNetdev> rdma_port_netdevs(const RdmaNl& nl) {
  std::vector<RdmaPortNetdev> out;
  for (const auto& dev : rdma_devices(nl)) {
    int error = 0;
    // A device unregistered between the two requests answers an error: it has no ports left.
    const auto ports = nl.request(RDMA_NLDEV_CMD_PORT_GET, NLM_F_DUMP,
                                  {nl_u32(RDMA_NLDEV_ATTR_DEV_INDEX, dev.index)},
                                  "ports of RDMA device " + dev.name, &error);
    if (error != 0) continue;
    for (const auto& m : ports) {
      RdmaPortNetdev p;
      p.ibdev = dev.name;
      p.dev_index = dev.index;
      p.port = nl_get_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX).value_or(0);
      p.netdev = nl_get_str(m, RDMA_NLDEV_ATTR_NDEV_NAME);
      p.ifindex = static_cast<int>(nl_get_u32(m, RDMA_NLDEV_ATTR_NDEV_INDEX).value_or(0));
      out.push_back(std::move(p));
    }
  }
  return out;
}

std::vector<RdmaPortNetdev> rdma_port_netdevs() {
  const auto nl = RdmaNl::open_if_present();
  return nl ? rdma_port_netdevs(*nl) : std::vector<RdmaPortNetdev>{};
}

RdmaNetnsMode rdma_netns_mode(const RdmaNl& nl) {
  int error = 0;
  const auto replies = nl.request(RDMA_NLDEV_CMD_SYS_GET, 0, {}, "RDMA netns mode", &error);
  if (error != 0) return RdmaNetnsMode::kUnknown;
  for (const auto& m : replies) {
    if (const auto mode = nl_get_u8(m, RDMA_NLDEV_SYS_ATTR_NETNS_MODE))
      return *mode ? RdmaNetnsMode::kShared : RdmaNetnsMode::kExclusive;
  }
  return RdmaNetnsMode::kUnknown;
}

std::string to_string(RdmaNetnsMode mode) {
  switch (mode) {
    case RdmaNetnsMode::kShared:
      return "shared";
    case RdmaNetnsMode::kExclusive:
      return "exclusive";
    case RdmaNetnsMode::kUnknown:
      break;
  }
  return "";
}

RdmaNetnsMode rdma_netns_mode_here() {
  try {
    const auto nl = RdmaNl::open_if_present();
    return nl ? rdma_netns_mode(*nl) : RdmaNetnsMode::kUnknown;
  } catch (const Error&) {
    return RdmaNetnsMode::kUnknown;
  }
}

int set_rdma_device_netns(const RdmaNl& nl, uint32_t index, const NetnsFd& to,
                          std::string& message) {
  int error = 0;
  nl.request(RDMA_NLDEV_CMD_SET, 0,
             {nl_u32(RDMA_NLDEV_ATTR_DEV_INDEX, index),
              nl_u32(RDMA_NLDEV_NET_NS_FD, static_cast<uint32_t>(to.fd()))},
             "moving RDMA device " + std::to_string(index), &error, &message);
  return error;
}

int rename_rdma_device(const RdmaNl& nl, uint32_t index, const std::string& name,
                       std::string& message) {
  int error = 0;
  nl.request(RDMA_NLDEV_CMD_SET, 0,
             {nl_u32(RDMA_NLDEV_ATTR_DEV_INDEX, index), nl_str(RDMA_NLDEV_ATTR_DEV_NAME, name)},
             "renaming RDMA device " + std::to_string(index), &error, &message);
  return error;
}

}  // namespace gdrproxy::netns
