// Link identities read raw from rtnetlink (see link_identity.h; the attributes: rtnl_abi.h).
#include "netns/link_identity.h"

#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "base/escape.h"
#include "netns/rtnl_abi.h"

namespace gdrproxy::netns {
namespace {

namespace abi = rtnl_abi;
using MsgPtr = NlPtr<nl_msg, nlmsg_free>;

std::string attr_string(nlattr* a) {
  if (!a) return "";
  const auto* p = static_cast<const char*>(nla_data(a));
  return std::string(p, strnlen(p, static_cast<size_t>(nla_len(a))));
}

std::string attr_hw(nlattr* a) {
  if (!a || nla_len(a) == 0) return "";
  const auto* p = static_cast<const unsigned char*>(nla_data(a));
  bool zero = true;
  std::string out;
  char buf[4];
  for (int i = 0; i < nla_len(a); ++i) {
    zero = zero && p[i] == 0;
    std::snprintf(buf, sizeof buf, i ? ":%02x" : "%02x", p[i]);
    out += buf;
  }
  return zero ? "" : out;
}

struct DumpCtx {
  std::vector<LinkIdentity>* out;
  std::optional<int> nsid;
};

int on_link(nl_msg* msg, void* arg) {
  auto* ctx = static_cast<DumpCtx*>(arg);
  nlmsghdr* h = nlmsg_hdr(msg);
  if (h->nlmsg_type != RTM_NEWLINK) return NL_OK;
  nlattr* tb[abi::kMaxAttr + 1] = {};
  if (nlmsg_parse(h, sizeof(ifinfomsg), tb, abi::kMaxAttr, nullptr) < 0) return NL_OK;
  const auto* ifi = static_cast<const ifinfomsg*>(nlmsg_data(h));
  LinkIdentity id;
  id.ifindex = ifi->ifi_index;
  id.name = attr_string(tb[abi::kIfname]);
  id.mac = attr_hw(tb[abi::kAddress]);
  id.perm_addr = attr_hw(tb[abi::kPermAddress]);
  if (tb[abi::kLinkinfo]) {
    nlattr* li[abi::kInfoKind + 1] = {};
    if (nla_parse_nested(li, abi::kInfoKind, tb[abi::kLinkinfo], nullptr) == 0)
      id.kind = attr_string(li[abi::kInfoKind]);
  }
  if (tb[abi::kParentDevName])
    id.parent = attr_string(tb[abi::kParentBusName]) + "/" + attr_string(tb[abi::kParentDevName]);
  // The kernel sends IFLA_LINK only for a link that has one (not for a NIC, whose iflink is
  // itself); a veth's peer may have the same number in its own namespace.
  if (tb[abi::kLink] && nla_get_u32(tb[abi::kLink]) != 0) {
    id.link_ifindex = static_cast<int>(nla_get_u32(tb[abi::kLink]));
    // No IFLA_LINK_NETNSID: the other end is in the link's own namespace. The number, relative
    // to the origin, is turned into "origin" by links() when it names the origin itself.
    if (tb[abi::kLinkNetnsid])
      id.link_netns = "nsid " + std::to_string(nla_get_s32(tb[abi::kLinkNetnsid]));
    else
      id.link_netns = ctx->nsid ? "nsid " + std::to_string(*ctx->nsid) : "origin";
  }
  ctx->out->push_back(std::move(id));
  return NL_OK;
}

int on_nsid(nl_msg* msg, void* arg) {
  nlmsghdr* h = nlmsg_hdr(msg);
  nlattr* tb[abi::kNetnsaFd + 1] = {};
  if (h->nlmsg_type == abi::kNewNsid &&
      nlmsg_parse(h, sizeof(rtgenmsg), tb, abi::kNetnsaFd, nullptr) == 0 && tb[abi::kNetnsaNsid])
    *static_cast<int*>(arg) = nla_get_s32(tb[abi::kNetnsaNsid]);
  return NL_OK;
}

// Sends `msg` and hands every reply to `fn`; libnl's error, 0 when none (-NLE_DUMP_INTR: a dump
// the kernel marked interrupted, read to its end).
int exchange_rc(nl_sock* sock, nl_msg* msg, nl_recvmsg_msg_cb_t fn, void* arg) {
  if (int rc = nl_send_auto(sock, msg); rc < 0) return rc;
  NlPtr<nl_cb, nl_cb_put> cb(nl_cb_clone(nl_socket_get_cb(sock)));
  if (!cb) throw Error("cannot allocate a netlink callback");
  nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, fn, arg);
  const int rc = nl_recvmsgs(sock, cb.get());
  return rc < 0 ? rc : 0;
}

void exchange(nl_sock* sock, nl_msg* msg, nl_recvmsg_msg_cb_t fn, void* arg, const char* what) {
  if (int rc = exchange_rc(sock, msg, fn, arg); rc < 0) throw_nl(what, rc);
}

}  // namespace

bool LinkIdentity::anchored() const {
  return !parent.empty() || !perm_addr.empty() || (link_ifindex != 0 && link_netns != kPeerIsARail);
}

std::string LinkIdentity::describe() const {
  std::string s = (kind.empty() ? "device" : gdrproxy::escape_text(kind)) + " ifindex " +
                  std::to_string(ifindex);
  if (!parent.empty()) s += " parent " + gdrproxy::escape_text(parent);
  if (!perm_addr.empty()) s += " permaddr " + perm_addr;
  if (link_ifindex) s += " peer ifindex " + std::to_string(link_ifindex) + " in " + link_netns;
  if (!name.empty()) s += " name " + gdrproxy::quote_text(name);
  if (!mac.empty()) s += " mac " + mac;
  return s;
}

Json LinkIdentity::to_json() const {
  Json j{{"ifindex", ifindex}, {"kind", kind}, {"parent", parent}, {"perm_addr", perm_addr}};
  if (link_ifindex) j["link"] = {{"ifindex", link_ifindex}, {"netns", link_netns}};
  return j;
}

LinkIdentity LinkIdentity::from_json(const Json& j) {
  LinkIdentity id;
  try {
    id.ifindex = j.at("ifindex").get<int>();
    id.kind = j.at("kind").get<std::string>();
    id.parent = j.at("parent").get<std::string>();
    id.perm_addr = j.at("perm_addr").get<std::string>();
    if (j.contains("link")) {
      id.link_ifindex = j["link"].at("ifindex").get<int>();
      id.link_netns = j["link"].at("netns").get<std::string>();
    }
  } catch (const std::exception& e) {
    throw Error(std::string("not an identity record: ") + e.what());
  }
  return id;
}

bool same_device(const LinkIdentity& want, const LinkIdentity& got,
                 const std::vector<std::string>& rail_places) {
  const bool peer_place =
      want.link_netns == kPeerIsARail
          ? std::find(rail_places.begin(), rail_places.end(), got.link_netns) != rail_places.end()
          : want.link_netns == got.link_netns;
  return want.kind == got.kind && want.parent == got.parent && want.perm_addr == got.perm_addr &&
         want.link_ifindex == got.link_ifindex && peer_place;
}

LinkReader::LinkReader() : self_(NetnsFd::current()) {
  // Requests are answered by one message (or a dump ending in NLMSG_DONE), with no ACK after it.
  nl_socket_disable_auto_ack(sock_.get());
}

std::vector<LinkIdentity> LinkReader::links(std::optional<int> nsid) const {
  std::vector<LinkIdentity> out;
  // A dump interrupted by a change of the links (another container's rails moving) is read
  // again, a new request each time.
  for (int attempt = 1;; ++attempt) {
    MsgPtr msg(nlmsg_alloc_simple(RTM_GETLINK, NLM_F_DUMP));
    if (!msg) throw Error("cannot allocate a netlink message");
    ifinfomsg ifi{};
    ifi.ifi_family = AF_UNSPEC;
    if (nlmsg_append(msg.get(), &ifi, sizeof ifi, NLMSG_ALIGNTO) < 0 ||
        (nsid && nla_put_s32(msg.get(), abi::kTargetNetnsid, *nsid) < 0))
      throw Error("cannot build a link dump request");
    out.clear();
    DumpCtx ctx{&out, nsid};
    const int rc = exchange_rc(sock_.get(), msg.get(), on_link, &ctx);
    if (rc == -NLE_DUMP_INTR && attempt < kDumpAttempts) continue;
    if (rc < 0)
      throw_nl(
          nsid ? "cannot dump the links of nsid " + std::to_string(*nsid) : "cannot dump links",
          rc);
    break;
  }
  // A peer in the origin, seen from a link elsewhere, carries the id the origin gives itself.
  const int self = query_nsid(self_.fd());
  for (auto& id : out)
    if (self != abi::kNsidNotAssigned && id.link_netns == "nsid " + std::to_string(self))
      id.link_netns = "origin";
  return out;
}

int LinkReader::query_nsid(int fd) const {
  MsgPtr msg(nlmsg_alloc_simple(abi::kGetNsid, 0));
  rtgenmsg g{};
  g.rtgen_family = AF_UNSPEC;
  if (!msg || nlmsg_append(msg.get(), &g, sizeof g, NLMSG_ALIGNTO) < 0 ||
      nla_put_u32(msg.get(), abi::kNetnsaFd, static_cast<uint32_t>(fd)) < 0)
    throw Error("cannot build a namespace id request");
  int nsid = abi::kNsidNotAssigned;
  exchange(sock_.get(), msg.get(), on_nsid, &nsid, "cannot read a namespace id");
  return nsid;
}

int LinkReader::nsid_of(const NetnsFd& ns) const {
  int nsid = query_nsid(ns.fd());
  if (nsid != abi::kNsidNotAssigned) return nsid;
  MsgPtr msg(nlmsg_alloc_simple(abi::kNewNsid, NLM_F_ACK));
  rtgenmsg g{};
  g.rtgen_family = AF_UNSPEC;
  if (!msg || nlmsg_append(msg.get(), &g, sizeof g, NLMSG_ALIGNTO) < 0 ||
      nla_put_u32(msg.get(), abi::kNetnsaFd, static_cast<uint32_t>(ns.fd())) < 0 ||
      nla_put_s32(msg.get(), abi::kNetnsaNsid, abi::kNsidNotAssigned) < 0)
    throw Error("cannot build a namespace id request");
  if (int rc = nl_send_auto(sock_.get(), msg.get()); rc < 0)
    throw_nl("cannot give " + ns.describe() + " a namespace id", rc);
  // EEXIST: another process gave it one meanwhile.
  if (int rc = nl_wait_for_ack(sock_.get()); rc < 0 && rc != -NLE_EXIST)
    throw_nl("cannot give " + ns.describe() + " a namespace id", rc);
  nsid = query_nsid(ns.fd());
  if (nsid == abi::kNsidNotAssigned) throw Error(ns.describe() + " has no namespace id");
  return nsid;
}

}  // namespace gdrproxy::netns
