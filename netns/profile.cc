// Loading and validating ARP profiles (see profile.h).
#include "netns/profile.h"

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "netns/builtin_profiles.h"
#include "netns/sysctl.h"

namespace gdrproxy::netns {

std::vector<std::string> profile_search_dirs(const std::string& explicit_dir) {
  std::vector<std::string> dirs;
  if (!explicit_dir.empty()) dirs.push_back(explicit_dir);
  dirs.push_back("/etc/gdrproxy/netns");
  return dirs;
}

ArpProfile profile_from_json(const Json& j, const std::string& origin) {
  ArpProfile p;
  try {
    p.name = j.at("name").get<std::string>();
    for (const auto& [key, value] : j.at("sysctls").items()) {
      const auto& known = journaled_sysctl_keys();
      if (std::find(known.begin(), known.end(), key) == known.end())
        throw Error("unknown sysctl '" + key +
                    "' (known: arp_announce arp_ignore arp_filter rp_filter)");
      p.sysctls[key] = value.get<int>();
    }
    if (j.contains("source_routing") && !j["source_routing"].is_null()) {
      p.source_routing = true;
      p.table_base = j["source_routing"].at("table_base").get<unsigned>();
      p.rule_priority_base = j["source_routing"].at("rule_priority_base").get<unsigned>();
    }
  } catch (const Error& e) {
    throw Error("ARP profile " + origin + ": " + e.what());
  } catch (const std::exception& e) {
    throw Error("ARP profile " + origin + " is malformed: " + e.what());
  }
  bool strict = (p.sysctls.count("rp_filter") && p.sysctls["rp_filter"] == 1) ||
                (p.sysctls.count("arp_filter") && p.sysctls["arp_filter"] == 1);
  if (strict && !p.source_routing)
    throw Error("ARP profile " + origin +
                ": rp_filter=1 or arp_filter=1 without source_routing drops replies on "
                "every rail but one");
  p.raw = j;
  return p;
}

ArpProfile load_profile(const std::string& name_or_path, const std::string& explicit_dir) {
  std::string path;
  if (name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json")) {
    path = name_or_path;
  } else {
    for (const auto& dir : profile_search_dirs(explicit_dir)) {
      std::string candidate = dir + "/" + name_or_path + ".json";
      if (std::filesystem::exists(candidate)) {
        path = candidate;
        break;
      }
    }
    if (path.empty()) {
      std::string builtin;
      for (const auto& p : builtin_profiles()) {
        if (p.name == name_or_path) {
          Json j;
          try {
            j = Json::parse(p.json);
          } catch (const std::exception& e) {
            throw Error("built-in ARP profile " + name_or_path + " is not valid JSON: " + e.what());
          }
          return profile_from_json(j, "built-in " + name_or_path);
        }
        builtin += " " + std::string(p.name);
      }
      std::string searched;
      for (const auto& dir : profile_search_dirs(explicit_dir)) searched += " " + dir;
      throw Error("ARP profile '" + name_or_path + "' not found in:" + searched +
                  ", nor built in (built in:" + builtin + ")");
    }
  }
  std::ifstream in(path);
  if (!in) throw Error("cannot read ARP profile " + path);
  Json j;
  try {
    j = Json::parse(in);
  } catch (const std::exception& e) {
    throw Error("ARP profile " + path + " is not valid JSON: " + e.what());
  }
  return profile_from_json(j, path);
}

}  // namespace gdrproxy::netns
