// `gdrproxy runtime [--runtime runc|crun|PATH] [--config FILE] [--grant ...] -- RUNTIME-ARGS...`,
// also installable as `gdrproxy-runtime` (a link to the binary): the OCI runtime a container
// engine (podman --runtime, containerd's runc shim BinaryName) calls. On `create` and `run` it
// prepares the bundle for `gdrproxy agent` (bundle_prepare.h) and then execs the real runtime;
// every other verb passes through untouched. The idea not to miss: the grant set is the devices
// the container already asks for in linux.devices (what --device or CDI put there), each of which
// must be within the operator's /etc/gdrproxy/runtime.json; a device outside it stops the
// container before the runtime starts, and annotations are never read. With "rails": true the
// RoCE netdevs of each granted RDMA device go with it, moved in and given back by the rail hooks
// (hook_command.h), so an engine without CDI (Docker 20.10) gets them as podman does from a spec.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gdrproxy::proxy {

inline constexpr const char* kRuntimeConfigPath = "/etc/gdrproxy/runtime.json";

// A second runtime handler is a link named gdrproxy-runtime-NAME: `suffix` is what follows
// "gdrproxy-runtime" in the link's name, "" for the shim itself or "-NAME" (NAME of letters,
// digits, '_' and '.'); anything else is no name of the shim's.
bool is_shim_link_suffix(std::string_view suffix);
// The file such a link reads: runtime-NAME.json in the directory of `base`, the file the plain
// link would read (/etc/gdrproxy/runtime.json, or GDRPROXY_RUNTIME_CONFIG's).
std::string suffixed_shim_config(const std::string& base, const std::string& suffix);

struct ShimOptions {
  std::optional<std::string> runtime;  // else the config's "runtime", else runc
  std::string config_path = kRuntimeConfigPath;
  std::optional<std::vector<std::string>> grants;  // --grant: instead of linux.devices
};

// The verb and bundle of a runtime command line (global options skipped); bundle defaults to
// ".". verb is "" when there is none.
struct RuntimeCall {
  std::string verb;
  std::string bundle = ".";
  // runc's global --log and --log-format: where containerd-shim-runc-v2 reads the runtime's
  // errors from (its JSON lines), so the shim's own refusal is written there too.
  std::string log_path;
  std::string log_format = "text";
  std::string id;        // the container's id: the last argument
  std::string pid_file;  // create's --pid-file
};
// A message as runc writes one to its --log file (`level`: "error", "warning"): a JSON line
// {"level", "msg", "time"} for --log-format json, else logrus' text line.
std::string runtime_log_line(const std::string& format, const std::string& msg,
                             const std::string& time, const std::string& level = "error");
RuntimeCall parse_runtime_args(const std::vector<std::string>& args);

// Prepares (for create/run) and execs the runtime; returns only on failure, with the exit
// status to use (1: refused or failed to prepare, 127: runtime not found).
int run_runtime_shim(const ShimOptions& options, const std::vector<std::string>& runtime_args);

}  // namespace gdrproxy::proxy
