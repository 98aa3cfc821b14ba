// `gdrproxy netns move`: journal, then move rails into a target namespace and configure them.
//
// The idea not to miss: nothing changes before the journal is on disk, and any failure after
// that point runs the same restore that a later `gdrproxy netns restore` would, so a failed move
// leaves the host as it was. Input that can be checked up front (names, namespaces, guards) is
// checked before the journal is written. A rail's soft-RoCE device, which the kernel drops with
// the move, is journaled and made again in the target (soft_roce.h). In exclusive RDMA netns mode
// a rail's other RDMA devices are journaled and moved with it (rdma_netns.h); the journal also
// records the mode.
#pragma once

#include <sys/types.h>

#include <ostream>
#include <string>
#include <vector>

namespace gdrproxy::netns {

struct MoveOptions {
  pid_t target_pid = 0;     // either this...
  std::string target_path;  // ...or this names the target namespace
  std::vector<std::string> ifaces;
  std::string profile = "multirail";
  std::string profile_dir;  // extra directory searched first
  std::string journal;
  bool allow_bootstrap = false;              // allow moving the default-route interface
  std::vector<std::string> bootstrap_addrs;  // interfaces carrying these are refused too
};

// Throws gdrproxy::Error (after rolling back) on failure. Progress notes go to `log`.
void move_rails(const MoveOptions& opts, std::ostream& log);

}  // namespace gdrproxy::netns
