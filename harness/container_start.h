// The OCI container `run` starts CMD in (GDR_HARNESS_RUNTIME=runc|crun|podman): its bundle or
// podman's arguments, the node's agent, and the runtime shim's config. The idea not to miss: the
// rails stay the lifecycle's (the container joins the pinned rail namespace by path), and every
// device edit of the bundle is the shim's (`gdrproxy runtime`, which prepares the bundle and
// execs the real runtime): this file writes the process, mounts and namespaces and nothing of the
// devices. The agent, when the harness starts it, lives as long as the node's runs and grants
// exactly the run's grant set; an operator's agent (GDR_HARNESS_AGENT_SOCKET) decides by its own
// config. Everything lives under <state>/run, where containers.cc removes it.
#pragma once

#include <string>
#include <vector>

#include "harness/lifecycle.h"

namespace gdrproxy::harness {

// GDR_HARNESS_RUNTIME as a run uses it: "" (the harness's own namespaces), runc, crun, podman;
// "auto" becomes podman where installed, else runc, else crun (else stays "auto").
std::string container_runtime(const Environment& env);

// Failure 125, before anything is changed, when `runtime` is not one this path can drive here.
void check_container_runtime(const Environment& env, const std::string& runtime);

struct ContainerRequest {
  std::string runtime;  // runc, crun or podman
  std::string key;      // node or rank-N
  std::string grants;   // comma list ("" none)
  bool plan_has_sysfs = false;
  std::vector<std::string> env;  // NAME=VALUE, CMD's whole environment
  std::vector<std::string> cmd;
};

// Writes the container's files, starts (or finds) the agent, and returns the command line that
// runs the container in the foreground: always through the runtime shim. Under the run lock.
std::vector<std::string> prepare_container(const Context& c, const ContainerRequest& r);

}  // namespace gdrproxy::harness
