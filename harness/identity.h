// Which node and rank this is, from the launcher's environment, and where that node's state
// lives. The idea not to miss: identify() is pure (the environment is a map), so the launcher
// rules are tested without a launcher: Slurm (SLURM_PROCID or SLURM_NODEID set) wins over Open
// MPI (OMPI_COMM_WORLD_RANK), which wins over a bare PMIx launcher (PMIX_RANK); the node's name
// is GDR_HARNESS_NODE, else SLURMD_NODENAME, else the host name, kept to [A-Za-z0-9._-] since
// it names a directory.
#pragma once

#include <map>
#include <string>

namespace gdrproxy::harness {

using Environment = std::map<std::string, std::string>;

// The process's own environment.
Environment process_environment();
// The host name (uname -n).
std::string this_host();

// Where a node's state lives: <state>/plan.json, and under <state>/run what a run holds (the
// journal, the pinned rail namespace, the owner files, containers and agent).
struct StatePaths {
  std::string state, run_dir, plan, journal, ctr_netns;
  explicit StatePaths(const std::string& state_dir);
  StatePaths() = default;
};

struct Identity {
  std::string launcher = "none";  // slurm, openmpi, pmix or none
  std::string rank, local_rank, node_index;
  std::string host, node;
  bool state_from_env = false;  // GDR_HARNESS_STATE named the state directory
  StatePaths paths;
};

// Throws Failure when no node name can be derived ("" or "." or ".." after the alphabet is
// applied).
Identity identify(const Environment& env, const std::string& host);

// "node N (host H), launcher slurm node index 1 rank 3 local rank 1".
std::string identity_line(const Identity& id);

// "VAR" set and not empty in env.
bool env_set(const Environment& env, const std::string& name);
std::string env_or(const Environment& env, const std::string& name, const std::string& fallback);
// 1, true or yes.
bool env_true(const Environment& env, const std::string& name);

}  // namespace gdrproxy::harness
