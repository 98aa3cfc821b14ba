// Per-interface IPv4 sysctls (/proc/sys/net/ipv4/conf/<if>/<key>) of the calling thread's
// network namespace. Call inside NetnsFd::run_inside to reach another namespace: the file is
// resolved against the namespace of the thread that opens it.
#pragma once

#include <string>
#include <vector>

namespace gdrproxy::netns {

// The keys every journal records, whatever the profile touches.
const std::vector<std::string>& journaled_sysctl_keys();

int read_conf_sysctl(const std::string& ifname, const std::string& key);
void write_conf_sysctl(const std::string& ifname, const std::string& key, int value);

}  // namespace gdrproxy::netns
