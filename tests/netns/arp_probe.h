// A raw ARP prober for the ARP-flux test: sends one "who-has <ip>" broadcast out of an interface
// of a namespace and collects every reply that arrives within a window. Counting the replies
// (and their sender MACs) is what shows ARP flux: with default sysctls every rail of a node
// answers for every address of the node.
#pragma once

#include <string>
#include <vector>

namespace gdrproxy::netns::test {

// MACs ("aa:bb:..") of every ARP reply for `target_ip`, in arrival order. Runs in `netns_path`,
// sends from `ifname` with sender address `sender_ip`.
std::vector<std::string> arp_who_has(const std::string& netns_path, const std::string& ifname,
                                     const std::string& sender_ip, const std::string& target_ip,
                                     int window_ms = 300);

}  // namespace gdrproxy::netns::test
