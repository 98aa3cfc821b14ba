// Editing a bundle for the agent (see bundle_prepare.h): read, derive every part from the grant
// set, write back atomically.
#include "proxy/oci/bundle_prepare.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "base/error.h"
#include "base/lists.h"
#include "proxy/devices/device_catalog.h"
#include "proxy/oci/container_grants.h"
#include "proxy/oci/oci_device_number.h"
#include "proxy/sandbox/profile_untrapped.h"

namespace gdrproxy::proxy {
namespace {

using json = nlohmann::json;

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read " + path);
  const json j = json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw Error(path + " is not a JSON object");
  return j;
}

}  // namespace

std::string prepare_bundle(const std::string& bundle, const PrepareOptions& o) {
  const std::string path = bundle + "/config.json";
  json config = read_json(path);
  const DeviceCatalog catalog = DeviceCatalog::scan(o.dev_root);
  const ContainerGrants grants = ContainerGrants::resolve(catalog, o.grants);

  const std::string names = join_list(grants.names());
  ProfileOptions p = o.profile;
  p.metadata = metadata_with_grants(p.metadata.value_or(""), grants.names());
  json& linux = config["linux"];
  if (!linux.is_object()) linux = json::object();
  json base;  // null: none
  if (o.base) {
    const json b = read_json(*o.base);
    base = resolve_base_profile(b.contains("linux") ? b["linux"]["seccomp"] : b, p, *o.base);
  } else if (linux.contains("seccomp") && linux["seccomp"].is_object()) {
    json own = linux["seccomp"];
    // Prepared before for this agent with these grants (an engine starting the same bundle
    // again, e.g. `podman restart`): nothing to do. Anything else with a listener is refused:
    // its profile already holds someone's notify rules.
    if (own.value("listenerPath", "") == p.listener_path &&
        own.value("listenerMetadata", "") == p.metadata.value_or(""))
      return path + ": already prepared for " + p.listener_path + " with grants [" + names +
             "], left as it is";
    if (own.contains("listenerPath"))
      throw Error(path + " already hands its seccomp listener to " + own["listenerPath"].dump() +
                  "; pass --base to replace its profile");
    base = resolve_base_profile(own, p, path);
  }
  // Requests let run untrapped need a deny-by-default profile (libseccomp refuses a rule of the
  // default action): an allow-by-default one keeps trapping every device ioctl.
  std::string untrapped;
  if (!p.filter.kernel_allowed_ioctls.empty()) {
    if (base.is_null() || base.value("defaultAction", "") == "SCMP_ACT_ALLOW") {
      p.filter.kernel_allowed_ioctls.clear();
      untrapped =
          ", every device ioctl trapped (the profile allows by default, so it cannot let "
          "any run untrapped)";
    }
  }
  linux["seccomp"] = merge_profile(base, p);
  if (!p.filter.kernel_allowed_ioctls.empty())
    untrapped = ", " + std::to_string(profile_untrapped_ioctls(linux["seccomp"]).requests.size()) +
                " ioctl request(s) untrapped";

  // /dev: the granted nodes, and no node of a guarded device that is not granted.
  json devices =
      linux.contains("devices") && linux["devices"].is_array() ? linux["devices"] : json::array();
  json kept = json::array();
  for (const json& d : devices) {
    const std::optional<dev_t> dev = oci_char_device_number(d, path);
    const bool guarded = dev && catalog.find(*dev) != nullptr;
    if (!guarded) kept.push_back(d);
  }
  const json nodes = grants.spec_devices();
  for (const json& d : nodes) kept.push_back(d);
  linux["devices"] = kept;
  json& resources = linux["resources"];
  if (!resources.is_object()) resources = json::object();
  json rules = resources.contains("devices") && resources["devices"].is_array()
                   ? resources["devices"]
                   : json::array();
  const json cgroup = grants.cgroup_rules(catalog);
  for (const json& r : cgroup) rules.push_back(r);
  resources["devices"] = rules;

  std::optional<ContainerSysfs> sys;
  if (o.sysfs) {
    sys = build_container_sysfs(bundle, grants, *o.sysfs);
    config["mounts"] = mounts_with_sysfs(config.value("mounts", json::array()), *sys);
  }

  // The hooks run this very binary, by its absolute path (hooks resolve in the runtime's
  // namespace, never through PATH).
  const auto self = [] {
    std::error_code ec;
    const std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    if (ec) throw Error("cannot find this executable for the hooks");
    return exe;
  };
  const auto hook_list = [&config](const char* kind) -> json& {
    json& hooks = config["hooks"];
    if (!hooks.is_object()) hooks = json::object();
    if (!hooks[kind].is_array()) hooks[kind] = json::array();
    return hooks[kind];
  };
  if (o.judge_hook_ctl) {
    // First: the hooks after it (the rails', an engine's own) already run judged. Written once.
    const json judge = {{"path", self()},
                        {"args", {"gdrproxy", "hook", "judge", "--ctl-socket", *o.judge_hook_ctl}}};
    json& create = hook_list("createRuntime");
    json others = json::array();
    for (const json& h : create)
      if (!(h.is_object() && h.contains("args") && h["args"].is_array() && h["args"].size() >= 3 &&
            h["args"][1] == "hook" && h["args"][2] == "judge"))
        others.push_back(h);
    create = json::array({judge});
    for (json& h : others) create.push_back(std::move(h));
  }
  if (!o.rails.empty()) {
    std::string rails;
    for (const auto& r : o.rails) rails += (rails.empty() ? "" : ",") + r;
    json create = {
        {"path", self()},
        {"args",
         {"gdrproxy", "hook", "create-runtime", "--rails", rails, "--profile", o.rail_profile}}};
    if (o.allow_plain_rails) create["args"].push_back("--allow-plain-rails");
    json poststop = {{"path", self()}, {"args", {"gdrproxy", "hook", "poststop"}}};
    if (o.rail_state_dir)
      for (json* h : {&create, &poststop}) {
        (*h)["args"].push_back("--state-dir");
        (*h)["args"].push_back(*o.rail_state_dir);
      }
    if (!o.rails_moved_at_create) hook_list("createRuntime").push_back(create);
    hook_list("poststop").push_back(poststop);
  }

  const std::string tmp = path + ".gdrproxy-tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << config.dump(2) << "\n";
    if (!out) throw Error("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw Error("cannot replace " + path);
  }
  return path + ": grants [" + names + "], listener " + p.listener_path + ", " +
         std::to_string(nodes.size()) + " device node(s), " + std::to_string(cgroup.size()) +
         " device cgroup rule(s)" + untrapped +
         (o.rails.empty()
              ? ""
              : ", " + std::to_string(o.rails.size()) + " rail(s) " +
                    (o.rails_moved_at_create ? "moved while it is created" : "by hooks")) +
         (o.judge_hook_ctl ? ", judged from its creation (hook judge, " + *o.judge_hook_ctl + ")"
                           : "") +
         (sys ? ", /sys of " + std::to_string(sys->gpus.size()) + " GPU(s) and " +
                    std::to_string(sys->nics.size()) + " NIC(s) from " + sys->tree + " (" +
                    std::to_string(sys->mounts.size() - 1) + " live bind(s))"
              : std::string(", /sys left as the bundle has it"));
}

}  // namespace gdrproxy::proxy
