// The rails moved while the runtime creates the container: the runtime shim, at `create` of a
// bundle that names its network namespace by path (a Kubernetes pod's, made by the CRI plugin
// before the container), forks a mover that moves the rails into that namespace while runc
// builds the container, and at `start` waits for it before the runtime may start the container.
// The idea not to miss: the container's process runs no code of the tenant's before `start`,
// so the rails are in place before the tenant's first instruction, as with the createRuntime
// hook, whose kernel wait (an RCU grace period per netdev) now overlaps runc's own work; and
// every way it can end badly gives the rails back: the move fails (rolled back, `start`
// refused with the cause), the runtime's `create` fails (the mover sees it exit with no pid
// file and gives them back), the container's process is not in the namespace (given back,
// `start` refused), the mover dies (its owner record dies with it, so the agent's sweep and
// the container's poststop give them back, and `start` is refused).
#pragma once

#include <string>
#include <vector>

namespace gdrproxy::proxy {

struct EarlyRailsRequest {
  std::string id;          // the container's id, the runtime's last argument
  std::string netns_path;  // the bundle's network namespace path (linux.namespaces)
  std::string pid_file;    // the runtime's --pid-file: the container's process, once created
  std::vector<std::string> rails;
  std::string profile = "multirail";
  bool allow_plain_rails = false;
  std::string state_dir = "/run/gdrproxy";
};

// The network namespace path a bundle's config.json (its text) names; "" when it names none
// (Docker, ctr, plain runc: the container gets a new namespace, and the hook moves the rails).
std::string bundle_network_namespace_path(const std::string& spec);

// At `create`: claims the container's rail directory, then starts the mover, detached, and
// returns at once. Throws gdrproxy::Error (nothing moved) when the directory is taken or the
// namespace cannot be opened.
void begin_early_rails_move(const EarlyRailsRequest& r);

// At `start`: false when the container has no early move; true once it has ended with the rails
// in the container's namespace. Throws gdrproxy::Error naming the container and the cause when
// it failed (its rails given back), or did not end within 60 s.
bool await_early_rails_move(const std::string& state_dir, const std::string& id);

}  // namespace gdrproxy::proxy
