// ARP/rp_filter profiles: data files in configs/netns/<name>.json, applied inside the target
// namespace after the rails are moved.
//
// The idea not to miss: strict rp_filter (1) and arp_filter (1) are only correct on a host with
// several rails in one subnet if every rail has its own source-based routing table; a profile
// that asks for them must also ask for "source_routing", or replies on every rail but one are
// dropped. load_profile() refuses such a profile. Values are written per rail
// (net.ipv4.conf.<rail>.*); the kernel uses the larger of that and conf.all for arp_announce,
// arp_ignore and rp_filter, so a target namespace whose conf.all is stricter stays stricter.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "netns/records.h"

namespace gdrproxy::netns {

struct ArpProfile {
  std::string name;
  std::map<std::string, int> sysctls;  // net.ipv4.conf.<rail>.<key> = value
  bool source_routing = false;
  unsigned table_base = 0;          // rail i uses routing table table_base + i
  unsigned rule_priority_base = 0;  // and a rule of priority rule_priority_base + i
  Json raw;                         // the file as read, kept in the journal
};

// Directories searched for <name>.json, in order: `explicit_dir` (if not empty, `--profile-dir`),
// /etc/gdrproxy/netns. A name none of them has is looked up among the built-in profiles
// (configs/netns/, embedded: builtin_profiles.h).
std::vector<std::string> profile_search_dirs(const std::string& explicit_dir);
// `name_or_path` is a profile name or a path to a .json file.
ArpProfile load_profile(const std::string& name_or_path, const std::string& explicit_dir);
ArpProfile profile_from_json(const Json& j, const std::string& origin);

}  // namespace gdrproxy::netns
