// The node's plan (<state>/plan.json, format 1): the rails `prepare` chose, NCCL_IB_HCA, the
// bootstrap interface, the synthetic sysfs where there is one, who prepared it and with which
// variables. The idea not to miss: every other verb reads the node from this file alone, and
// refuses a file that is not a plan of this format rather than guess at it; the SPANK plugin
// and the tests read it too, so its keys do not change.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gdrproxy::harness {

inline constexpr int kPlanFormat = 1;

struct PlanRail {
  std::string netdev;
  std::string ibdev;  // "" for a plain rail (no RDMA device: JSON null)
  std::optional<unsigned> port;
  std::optional<int> gid_index;
  std::vector<std::string> ipv4;
};

struct Plan {
  std::string node, host, created;
  std::string launcher = "none", rank, local_rank, node_index;
  std::vector<PlanRail> rails;
  std::string nccl_ib_hca;                        // "=mlx5_0:1,..." or ""
  std::string bootstrap_iface;                    // "" when none (JSON null)
  std::string sysfs_tree, sysfs_mount_plan;       // both "" when the plan has no synthetic sysfs
  nlohmann::json env = nlohmann::json::object();  // the selection variables prepare read

  std::vector<std::string> netdevs() const;
  // The RDMA devices of the rails, each once, in order.
  std::vector<std::string> ibdevs() const;
};

nlohmann::json plan_to_json(const Plan& p);
// Throws Failure(why, status) on a document that is not a plan of kPlanFormat.
Plan plan_from_json(const nlohmann::json& j, const std::string& origin, int status = 125);

// Reads <path>: "no plan at PATH: run 'gdr-harness prepare' on this node first" when absent,
// "PATH is not a gdr-harness plan of format 1 (...)" when not a plan; both with `status`.
Plan load_plan(const std::string& path, int status = 125);
// Writes through PATH.tmp, renamed into place.
void save_plan(const Plan& p, const std::string& path);

}  // namespace gdrproxy::harness
