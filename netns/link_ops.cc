// rtnetlink link changes (see link_ops.h).
#include "netns/link_ops.h"

#include <net/if.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include "base/error.h"
#include "netns/rtnl_abi.h"

namespace gdrproxy::netns {
namespace {

std::string link_name(rtnl_link* link) {
  const char* n = rtnl_link_get_name(link);
  return n ? n : "ifindex " + std::to_string(rtnl_link_get_ifindex(link));
}

void change(const NlSocket& sock, rtnl_link* link, rtnl_link* changes, const std::string& what) {
  if (int rc = rtnl_link_change(sock.get(), link, changes, 0); rc < 0)
    throw_nl(link_name(link) + ": cannot " + what, rc);
}

}  // namespace

LinkPtr find_link(const NlSocket& sock, const std::string& name) {
  rtnl_link* link = nullptr;
  int rc = rtnl_link_get_kernel(sock.get(), 0, name.c_str(), &link);
  if (rc < 0) return nullptr;
  return LinkPtr(link);
}

void move_link(const NlSocket& sock, rtnl_link* link, const NetnsFd& to) {
  LinkPtr changes(rtnl_link_alloc());
  rtnl_link_set_ns_fd(changes.get(), to.fd());
  change(sock, link, changes.get(), "move into network namespace " + to.describe());
}

void move_link_as(const NlSocket& sock, rtnl_link* link, const NetnsFd& to, int ifindex) {
  LinkPtr changes(rtnl_link_alloc());
  rtnl_link_set_ns_fd(changes.get(), to.fd());
  const std::string what = link_name(link) + ": cannot move into network namespace " +
                           to.describe() + " as ifindex " + std::to_string(ifindex);
  nl_msg* raw = nullptr;
  if (int rc = rtnl_link_build_change_request(link, changes.get(), 0, &raw); rc < 0)
    throw_nl(what, rc);
  NlPtr<nl_msg, nlmsg_free> msg(raw);
  if (nla_put_s32(msg.get(), rtnl_abi::kNewIfindex, ifindex) < 0)
    throw Error(what + ": message too long");
  if (int rc = nl_send_sync(sock.get(), msg.release()); rc < 0) throw_nl(what, rc);
}

void set_mtu(const NlSocket& sock, rtnl_link* link, unsigned mtu) {
  LinkPtr changes(rtnl_link_alloc());
  rtnl_link_set_mtu(changes.get(), mtu);
  change(sock, link, changes.get(), "set MTU " + std::to_string(mtu));
}

void set_up(const NlSocket& sock, rtnl_link* link, bool up) {
  LinkPtr changes(rtnl_link_alloc());
  if (up)
    rtnl_link_set_flags(changes.get(), IFF_UP);
  else
    rtnl_link_unset_flags(changes.get(), IFF_UP);
  change(sock, link, changes.get(), up ? "set up" : "set down");
}

void rename_link(const NlSocket& sock, rtnl_link* link, const std::string& name) {
  LinkPtr changes(rtnl_link_alloc());
  rtnl_link_set_name(changes.get(), name.c_str());
  change(sock, link, changes.get(), "rename to " + name);
}

bool link_is_up(rtnl_link* link) {
  return rtnl_link_get_flags(link) & IFF_UP;
}

}  // namespace gdrproxy::netns
