// Changes to one link through rtnetlink: move to another namespace, MTU, up/down, rename.
// Every function names the interface (and namespace) in its error.
#pragma once

#include <string>

#include "netns/nl.h"

namespace gdrproxy::netns {

// A link by name in `sock`'s namespace, or null.
LinkPtr find_link(const NlSocket& sock, const std::string& name);

void move_link(const NlSocket& sock, rtnl_link* link, const NetnsFd& to);
// The same, asking the kernel to give it `ifindex` there (IFLA_NEW_IFINDEX). A kernel before 6.7
// ignores the request and the link keeps its ifindex, or gets another where that is taken.
void move_link_as(const NlSocket& sock, rtnl_link* link, const NetnsFd& to, int ifindex);
void set_mtu(const NlSocket& sock, rtnl_link* link, unsigned mtu);
void set_up(const NlSocket& sock, rtnl_link* link, bool up);
void rename_link(const NlSocket& sock, rtnl_link* link, const std::string& name);

bool link_is_up(rtnl_link* link);

}  // namespace gdrproxy::netns
