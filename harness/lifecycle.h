// One lifecycle for a node's rails, whoever holds them: a `run` (one container per node, key
// "node"), each rank's run (rank-N) and each attached Slurm step (step-J.S). The idea not to
// miss: the first holder makes the pinned rail namespace (<state>/run/netns) and moves the
// plan's rails into it with `netns move` (journal first), later holders join it, and the last to
// leave gives the rails back with `netns restore`; what dead holders left (every owner dead, by
// pid and start time, zombies included) is cleaned up by the same code whether `teardown` asks
// or a reclaiming attach does. Every step runs under the node's run lock.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "harness/identity.h"
#include "harness/plan.h"
#include "harness/run_dir.h"

namespace gdrproxy::harness {

// A verb's context: who, the environment it reads, the gdrproxy it names to others.
struct Context {
  Identity id;
  Environment env;
  std::string gdrproxy;  // absolute path (GDRPROXY, else this binary)
  std::string arp_profile;
};

// GDRPROXY (checked executable) or this binary; the ARP profile of GDR_HARNESS_ARP_PROFILE.
Context make_context(const Environment& env);

// Failure "VERB needs root (...)" unless root.
void need_root(const std::string& verb);

enum class RailsMode {
  kNode,    // one holder (a run with one container per node)
  kShared,  // holders keyed rank-N or step-J.S share the rails
};

// With the run lock held: whether holder `key` sets up the rail namespace (false) or joins the
// one running (true). Refuses (Failure 125) a journal no live holder explains, a second holder
// in node mode or beside a node-mode run, and a key already held. With `reclaim`, state that
// only dead holders left is cleaned up first, in one line.
bool rails_enter(const Context& c, RailsMode mode, const std::string& key, bool reclaim);

// Registers `owner` as holder `key` and, unless joining, pins a new network namespace, moves the
// plan's rails into it (ARP profile, journal first), brings lo up and, with
// GDR_HARNESS_BOOTSTRAP_ADDR, adds the bootstrap link. Failure 125 on any step.
void rails_setup(const Context& c, const Plan& plan, RailsMode mode, const std::string& key,
                 pid_t owner, bool joined);

// Holder `key` leaves: its container deleted, its owner file removed; the last holder stops the
// agent, deletes the bootstrap link, gives the rails back and removes <state>/run. Takes the
// lock unless `lock` is held. false (with the error line) when the rails are not all given back.
bool rails_leave(const Context& c, const std::string& key, RunLock& lock);

// What dead holders left, removed or given back (containers, agent, processes left in the rail
// namespace, the bootstrap link, the rails, the pin, <state>/run); the plan stays. Failure when a
// rail cannot be given back (the state is kept).
void clean_dead_runs(const Context& c);

// The uverbs nodes of the plan's RDMA devices as they are now (after a move, which makes a
// soft-RoCE device again), for the grants.
std::vector<std::string> uverbs_grants(const Plan& plan);

// Processes whose network namespace is the one pinned at `path`.
std::vector<pid_t> pids_in_netns(const std::string& path);

}  // namespace gdrproxy::harness
