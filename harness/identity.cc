// See identity.h.
#include "harness/identity.h"

#include <sys/utsname.h>

#include "harness/output.h"

extern char** environ;

namespace gdrproxy::harness {

Environment process_environment() {
  Environment env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return env;
}

std::string this_host() {
  struct utsname u {};
  return ::uname(&u) == 0 ? std::string(u.nodename) : std::string("unknown");
}

StatePaths::StatePaths(const std::string& state_dir)
    : state(state_dir),
      run_dir(state_dir + "/run"),
      plan(state_dir + "/plan.json"),
      journal(run_dir + "/journal.json"),
      ctr_netns(run_dir + "/netns") {}

bool env_set(const Environment& env, const std::string& name) {
  const auto it = env.find(name);
  return it != env.end() && !it->second.empty();
}

std::string env_or(const Environment& env, const std::string& name, const std::string& fallback) {
  return env_set(env, name) ? env.at(name) : fallback;
}

bool env_true(const Environment& env, const std::string& name) {
  const std::string v = env_or(env, name, "");
  return v == "1" || v == "true" || v == "yes";
}

Identity identify(const Environment& env, const std::string& host) {
  Identity id;
  if (env_set(env, "SLURM_PROCID") || env_set(env, "SLURM_NODEID")) {
    id.launcher = "slurm";
    id.rank = env_or(env, "SLURM_PROCID", "");
    id.local_rank = env_or(env, "SLURM_LOCALID", "");
    id.node_index = env_or(env, "SLURM_NODEID", "");
  } else if (env_set(env, "OMPI_COMM_WORLD_RANK")) {
    id.launcher = "openmpi";
    id.rank = env.at("OMPI_COMM_WORLD_RANK");
    id.local_rank = env_or(env, "OMPI_COMM_WORLD_LOCAL_RANK", "");
    id.node_index = env_or(env, "OMPI_COMM_WORLD_NODE_RANK", "");
  } else if (env_set(env, "PMIX_RANK")) {
    id.launcher = "pmix";
    id.rank = env.at("PMIX_RANK");
    id.local_rank = env_or(env, "OMPI_COMM_WORLD_LOCAL_RANK", "");
  }
  id.host = host;
  const std::string raw = env_or(env, "GDR_HARNESS_NODE", env_or(env, "SLURMD_NODENAME", host));
  for (const char c : raw) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    id.node += ok ? c : '_';
  }
  if (id.node.empty() || id.node == "." || id.node == "..")
    throw Failure("cannot derive a node name from '" + raw + "' (set GDR_HARNESS_NODE)");
  id.state_from_env = env_set(env, "GDR_HARNESS_STATE");
  id.paths = StatePaths(env_or(env, "GDR_HARNESS_STATE", "/run/gdr-harness/" + id.node));
  return id;
}

std::string identity_line(const Identity& id) {
  std::string s = "node " + id.node + " (host " + id.host + ")";
  if (id.launcher != "none") {
    s += ", launcher " + id.launcher;
    if (!id.node_index.empty()) s += " node index " + id.node_index;
    if (!id.rank.empty()) s += " rank " + id.rank;
    if (!id.local_rank.empty()) s += " local rank " + id.local_rank;
  }
  return s;
}

}  // namespace gdrproxy::harness
