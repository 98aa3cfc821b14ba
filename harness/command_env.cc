// See command_env.h.
#include "harness/command_env.h"

#include <filesystem>

#include "harness/output.h"

namespace gdrproxy::harness {
namespace {

namespace fs = std::filesystem;

bool starts_with(const std::string& s, const char* p) {
  return s.rfind(p, 0) == 0;
}

}  // namespace

std::vector<std::string> command_environment(const Environment& env, const std::string& node,
                                             const Plan& plan) {
  std::vector<std::string> out;
  for (const auto& [name, value] : env) {
    const bool keep =
        name == "PATH" || name == "HOME" || name == "USER" || name == "LOGNAME" || name == "TERM" ||
        name == "LANG" || name == "TZ" || starts_with(name, "LC_") || starts_with(name, "NCCL_") ||
        starts_with(name, "UCX_") || starts_with(name, "NIXL_") || starts_with(name, "SLURM_") ||
        starts_with(name, "OMPI_") || starts_with(name, "PMIX_") || starts_with(name, "PMI_");
    if (!keep || name == "NCCL_TOPO_FILE" || name == "NCCL_IB_HCA" || name == "NCCL_SOCKET_IFNAME")
      continue;
    out.push_back(name + "=" + value);
  }
  const std::string &hca = plan.nccl_ib_hca, &boot = plan.bootstrap_iface;
  if (env.count("NCCL_IB_HCA") && env.at("NCCL_IB_HCA") != hca)
    say("NCCL_IB_HCA: the caller's value '" + env.at("NCCL_IB_HCA") +
        "' is replaced by the plan's");
  if (!hca.empty())
    out.push_back("NCCL_IB_HCA=" + hca);
  else
    say("NCCL_IB_HCA not set: no rail of the plan has an RDMA device (ibdev: none)");
  if (env.count("NCCL_SOCKET_IFNAME") && env.at("NCCL_SOCKET_IFNAME") != boot)
    say("NCCL_SOCKET_IFNAME: the caller's value '" + env.at("NCCL_SOCKET_IFNAME") +
        "' is replaced by the bootstrap interface");
  if (!boot.empty())
    out.push_back("NCCL_SOCKET_IFNAME=" + boot);
  else
    say("NCCL_SOCKET_IFNAME not set: the plan names no bootstrap interface");
  std::error_code ec;
  if (env_true(env, "INCLUDE_NCCL_TOPO") && env_set(env, "NCCL_TOPO_FILE") &&
      fs::is_regular_file(env.at("NCCL_TOPO_FILE"), ec))
    out.push_back("NCCL_TOPO_FILE=" + env.at("NCCL_TOPO_FILE"));
  if (env_true(env, "DEBUG_ALL")) {
    const std::string logdir = env_or(env, "GDR_HARNESS_LOG_DIR", "/tmp");
    if (!env.count("NCCL_DEBUG")) out.push_back("NCCL_DEBUG=INFO");
    if (!env.count("NCCL_DEBUG_SUBSYS")) out.push_back("NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH");
    if (!env.count("NCCL_DEBUG_FILE"))
      out.push_back("NCCL_DEBUG_FILE=" + logdir + "/nccl-debug." + node + ".%h.%p.log");
    if (!env.count("NCCL_TOPO_DUMP_FILE"))
      out.push_back("NCCL_TOPO_DUMP_FILE=" + logdir + "/nccl-topo." + node + ".xml");
    say("DEBUG_ALL=1: NCCL debug logging to " + logdir +
        "; debug output costs speed, do not compare bandwidth from this run");
  }
  out.push_back("GDR_HARNESS_NODE=" + node);
  return out;
}

}  // namespace gdrproxy::harness
