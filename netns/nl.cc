// RAII wrappers over libnl (see nl.h).
#include "netns/nl.h"

#include <linux/rtnetlink.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/utils.h>
#include <sys/socket.h>

#include "base/error.h"

namespace gdrproxy::netns {

void throw_nl(const std::string& what, int nl_error) {
  throw Error(what + ": " + nl_geterror(nl_error));
}

NlSocket::NlSocket() : sock_(nl_socket_alloc()) {
  if (!sock_) throw Error("cannot allocate a netlink socket");
  if (int rc = nl_connect(sock_.get(), NETLINK_ROUTE); rc < 0)
    throw_nl("cannot connect rtnetlink", rc);
}

NlSocket NlSocket::open_in(const NetnsFd& ns) {
  auto sock = ns.run_inside([] { return std::make_unique<NlSocket>(); });
  return std::move(*sock);
}

CachePtr NlSocket::links() const {
  nl_cache* c = nullptr;
  if (int rc = rtnl_link_alloc_cache(get(), AF_UNSPEC, &c); rc < 0)
    throw_nl("cannot dump links", rc);
  return CachePtr(c);
}

namespace {

void keep_parsed(nl_object* obj, void* arg) {
  nl_object_get(obj);
  static_cast<ObjList*>(arg)->emplace_back(obj);
}

int on_valid(nl_msg* msg, void* arg) {
  nl_msg_parse(msg, keep_parsed, arg);
  return NL_OK;
}

}  // namespace

ObjList NlSocket::dump(int rtm_type, const char* what) const {
  // A dump the kernel marks interrupted (the namespace changed while it was read: another
  // container's rails moving) is read again; libnl has consumed it to its end.
  for (int attempt = 1;; ++attempt) {
    ObjList out;
    if (int rc = nl_rtgen_request(get(), rtm_type, AF_UNSPEC, NLM_F_DUMP); rc < 0)
      throw_nl(std::string("cannot dump ") + what, rc);
    NlPtr<nl_cb, nl_cb_put> cb(nl_cb_clone(nl_socket_get_cb(get())));
    if (!cb) throw Error("cannot allocate a netlink callback");
    nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, on_valid, &out);
    const int rc = nl_recvmsgs(get(), cb.get());
    if (rc == -NLE_DUMP_INTR && attempt < kDumpAttempts) continue;
    if (rc < 0) throw_nl(std::string("cannot dump ") + what, rc);
    return out;
  }
}

ObjList NlSocket::addrs() const {
  return dump(RTM_GETADDR, "addresses");
}
ObjList NlSocket::routes() const {
  return dump(RTM_GETROUTE, "routes");
}
ObjList NlSocket::rules() const {
  return dump(RTM_GETRULE, "rules");
}

std::string addr_to_string(const nl_addr* addr) {
  if (!addr) return "";
  char buf[INET6_ADDRSTRLEN + 8];
  // nl_addr2str omits the prefix for full-length addresses; write it always.
  nl_addr* a = const_cast<nl_addr*>(addr);
  unsigned prefix = nl_addr_get_prefixlen(a);
  NlAddrPtr copy(nl_addr_clone(a));
  nl_addr_set_prefixlen(copy.get(), nl_addr_get_len(copy.get()) * 8);
  std::string text = nl_addr2str(copy.get(), buf, sizeof(buf));
  return text + "/" + std::to_string(prefix);
}

NlAddrPtr parse_addr(const std::string& text, int family) {
  nl_addr* a = nullptr;
  if (int rc = nl_addr_parse(text.c_str(), family, &a); rc < 0)
    throw_nl("bad address '" + text + "'", rc);
  return NlAddrPtr(a);
}

int ifindex_by_name(nl_cache* links, const std::string& name) {
  return rtnl_link_name2i(links, name.c_str());
}

std::string name_by_ifindex(nl_cache* links, int ifindex) {
  char buf[64] = {};
  if (!rtnl_link_i2name(links, ifindex, buf, sizeof(buf))) return "";
  return buf;
}

std::string link_mac(rtnl_link* link) {
  nl_addr* a = rtnl_link_get_addr(link);
  if (!a || nl_addr_get_len(a) == 0) return "";
  char buf[64];
  return nl_addr2str(a, buf, sizeof(buf));
}

}  // namespace gdrproxy::netns
