// The runtime shim (see runtime_shim.h): find the verb and bundle, derive the grant set, prepare,
// exec the real runtime.
#include "proxy/oci/runtime_shim.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "base/error.h"
#include "base/escape.h"
#include "base/file_io.h"
#include "base/lists.h"
#include "netns/rdma_sysfs.h"
#include "proxy/devices/device_catalog.h"
#include "proxy/engine/kernel_judgement.h"
#include "proxy/oci/agent_sockets.h"
#include "proxy/oci/bundle_prepare.h"
#include "proxy/oci/container_grants.h"
#include "proxy/oci/container_privilege.h"
#include "proxy/oci/early_rails.h"
#include "proxy/oci/runtime_config.h"
#include "proxy/policy/glob.h"

namespace gdrproxy::proxy {
namespace {

using json = nlohmann::json;

// Global options of runc and crun that take a value (given as "--opt value" or "--opt=value").
const std::set<std::string> kValueOptions = {
    "--root", "--log", "--log-format", "--criu", "--rootless", "--cgroup-manager", "--log-level"};

std::string rfc3339_now() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  tm t{};
  ::gmtime_r(&ts.tv_sec, &t);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ", t.tm_year + 1900,
                t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, ts.tv_nsec);
  return buf;
}

}  // namespace

std::string runtime_log_line(const std::string& format, const std::string& msg,
                             const std::string& time, const std::string& level) {
  // Bytes that are not UTF-8 become U+FFFD rather than an exception (the shim's own messages
  // are printable ASCII already).
  constexpr auto kReplace = json::error_handler_t::replace;
  if (format == "json")
    return json{{"level", level}, {"msg", msg}, {"time", time}}.dump(-1, ' ', false, kReplace) +
           "\n";
  // logrus' text format quotes the message as Go's %q does; JSON's escaping agrees for what
  // printable() leaves in it.
  return "time=\"" + time + "\" level=" + level +
         " msg=" + json(msg).dump(-1, ' ', false, kReplace) + "\n";
}

namespace {

// containerd-shim-runc-v2 (Docker, Kubernetes) shows the runtime's messages from its log file
// (--log), not from its stderr: a line there in the runtime's --log-format.
void append_runtime_log(const RuntimeCall& call, const std::string& msg, const std::string& level) {
  if (call.log_path.empty()) return;
  if (FILE* f = std::fopen(call.log_path.c_str(), "ae")) {
    std::fputs(runtime_log_line(call.log_format, msg, rfc3339_now(), level).c_str(), f);
    std::fclose(f);
  }
}

}  // namespace

RuntimeCall parse_runtime_args(const std::vector<std::string>& args) {
  RuntimeCall call;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.empty() || a[0] != '-') break;
    const size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    std::string value;
    if (eq != std::string::npos) {
      value = a.substr(eq + 1);
    } else if (kValueOptions.count(a) && i + 1 < args.size()) {
      value = args[++i];  // its value
    }
    if (name == "--log") call.log_path = value;
    if (name == "--log-format") call.log_format = value;
  }
  if (i >= args.size()) return call;
  call.verb = args[i];
  for (size_t k = i + 1; k < args.size(); ++k) {
    const std::string& a = args[k];
    if ((a == "--bundle" || a == "-b") && k + 1 < args.size()) {
      call.bundle = args[k + 1];
      ++k;
    } else if (a.rfind("--bundle=", 0) == 0) {
      call.bundle = a.substr(9);
    } else if (a == "--pid-file" && k + 1 < args.size()) {
      call.pid_file = args[++k];
    } else if (a.rfind("--pid-file=", 0) == 0) {
      call.pid_file = a.substr(11);
    }
  }
  if (i + 1 < args.size()) call.id = args.back();
  return call;
}

bool is_shim_link_suffix(std::string_view suffix) {
  if (suffix.empty()) return true;
  if (suffix.size() < 2 || suffix[0] != '-') return false;
  return std::all_of(suffix.begin() + 1, suffix.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.';
  });
}

std::string suffixed_shim_config(const std::string& base, const std::string& suffix) {
  const std::string dir = dirname_of(base);  // "" for a name without a directory
  return join(dir.empty() ? "." : dir, "runtime" + suffix + ".json");
}

int run_runtime_shim(const ShimOptions& o, const std::vector<std::string>& runtime_args) {
  std::string runtime = o.runtime.value_or("");
  const RuntimeCall call = parse_runtime_args(runtime_args);
  try {
    const ShimConfig config = load_shim_config(o.config_path);
    if (runtime.empty()) runtime = config.runtime;
    // A container whose rails the shim moves at create starts only with them in place.
    if (call.verb == "start" && config.rails && !call.id.empty())
      await_early_rails_move(config.rail_state_dir.value_or(kRailStateDir), call.id);
    if (call.verb == "create" || call.verb == "run") {
      // The bundle's config.json, read once for both judgements.
      const std::string spec_path = call.bundle + "/config.json";
      const std::optional<std::string> spec = read_text(spec_path, kWholeFile);
      if (!spec) throw Error("cannot read " + spec_path);
      // A privileged container first: it asks for every host device (some never grantable), and
      // the line must say why it is refused.
      const Unconfinement u = container_unconfinement(*spec, spec_path);
      std::vector<std::string> asked;
      try {
        std::optional<DeviceCatalog> catalog;  // scanned at the spec's first device
        asked = o.grants ? *o.grants
                         : requested_devices(*spec, spec_path, [&]() -> const DeviceCatalog& {
                             if (!catalog) catalog = DeviceCatalog::scan();
                             return *catalog;
                           });
      } catch (const Error&) {
        if (u.unconfined() && !config.accept_unconfined)
          throw Error(unconfined_refusal(u, "every host device"));
        throw;
      }
      std::optional<std::string> unconfined;
      if (!asked.empty()) {
        const std::string names = join_list(asked);
        if (u.unconfined() && !config.accept_unconfined) throw Error(unconfined_refusal(u, names));
        if (u.unconfined()) {
          const std::string warning =
              "gdrproxy runtime: warning: starting a privileged container (" + u.joined() +
              ") with " + printable(names) + ", as " + o.config_path +
              " accepts (\"accept_unconfined\"): it can undo every guard on its devices";
          std::fprintf(stderr, "%s\n", warning.c_str());
          append_runtime_log(call, warning, "warning");
          unconfined = u.joined();
        }
      }
      for (const std::string& name : asked) {
        bool allowed = false;
        for (const std::string& g : config.grants)
          allowed = allowed || glob_match(g.c_str(), name.c_str());
        if (!allowed)
          throw Error(
              "the container asks for device " + printable(name) + ", which " + o.config_path +
              (config.found ? " does not grant (its \"grants\")" : " does not exist to grant"));
      }
      PrepareOptions p;
      p.grants = asked;
      if (config.sysfs)
        p.sysfs->sysfs_root = config.sysfs_root;
      else
        p.sysfs.reset();
      if (config.rails) {
        for (const std::string& name : asked)
          for (const std::string& netdev : netns::netdevs_of_verbs_node(config.sysfs_root, name))
            if (std::find(p.rails.begin(), p.rails.end(), netdev) == p.rails.end())
              p.rails.push_back(netdev);
        p.rail_profile = config.rail_profile;
        p.allow_plain_rails = config.allow_plain_rails;
        p.rail_state_dir = config.rail_state_dir;
        // A bundle that names its network namespace (a pod's) has it before the container: the
        // rails move while the runtime creates it, and `start` waits for them (early_rails.h).
        // runc's create-and-start `run`, and a new namespace, keep the createRuntime hook.
        const std::string netns_path = bundle_network_namespace_path(*spec);
        if (!p.rails.empty() && call.verb == "create" && !call.pid_file.empty() &&
            !call.id.empty() && !netns_path.empty()) {
          EarlyRailsRequest r;
          r.id = call.id;
          r.netns_path = netns_path;
          r.pid_file = call.pid_file;
          r.rails = p.rails;
          r.profile = p.rail_profile;
          r.allow_plain_rails = p.allow_plain_rails;
          r.state_dir = config.rail_state_dir.value_or(kRailStateDir);
          begin_early_rails_move(r);
          p.rails_moved_at_create = true;
        }
      }
      if (config.lsm_hook) p.judge_hook_ctl = config.agent_ctl;
      p.base = config.base;
      p.profile.listener_path = config.listener;
      p.profile.metadata = config.metadata;
      if (unconfined)
        p.profile.metadata =
            metadata_with_line(config.metadata.value_or(""), kUnconfinedMetadataKey, *unconfined);
      p.profile.caps = docker_default_caps();
      p.profile.wait_killable_recv =
          runtime_supports_wait_killable_recv(runtime, kRuntimeFeatureDir);
      if (config.kernel_allow) {
        const Policy policy =
            config.policy ? Policy::load_file(*config.policy) : Policy::builtin_default();
        std::string note;
        p.profile.filter.kernel_allowed_ioctls = host_container_untrapped_ioctls(
            policy, asked, "/dev", note, config.lsm_judged, config.nvidia_abi_as);
        if (!note.empty()) std::fprintf(stderr, "gdrproxy runtime: %s\n", printable(note).c_str());
      }
      std::fprintf(stderr, "gdrproxy runtime: %s\n",
                   printable(prepare_bundle(call.bundle, p)).c_str());
    }
  } catch (const std::exception& e) {
    const std::string msg =
        "gdrproxy runtime: " + printable(e.what()) + ": not starting the container";
    std::fprintf(stderr, "%s\n", msg.c_str());
    append_runtime_log(call, msg, "error");
    return 1;
  }
  std::vector<char*> argv;
  argv.push_back(runtime.data());
  std::vector<std::string> copy = runtime_args;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execvp(runtime.c_str(), argv.data());
  std::fprintf(stderr, "gdrproxy runtime: cannot execute %s: %s\n", printable(runtime).c_str(),
               std::strerror(errno));
  return errno == ENOENT ? 127 : 126;
}

}  // namespace gdrproxy::proxy
