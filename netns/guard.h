// The bootstrap guard shared by `move` and `select`: the interface that carries the default
// route or a named bootstrap address is the node's way in; moving it cuts the node off.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "netns/nl.h"

namespace gdrproxy::netns {

// Why `ifname` must stay (e.g. "carries the default route"), or nothing.
std::optional<std::string> bootstrap_reason(const NlSocket& sock, const std::string& ifname,
                                            const std::vector<std::string>& bootstrap_addrs);

}  // namespace gdrproxy::netns
