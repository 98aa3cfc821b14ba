// See plan.h.
#include "harness/plan.h"

#include <sys/stat.h>
#include <algorithm>
#include <cstdio>
#include <fstream>

#include "harness/output.h"

namespace gdrproxy::harness {

using Json = nlohmann::json;

std::vector<std::string> Plan::netdevs() const {
  std::vector<std::string> out;
  for (const auto& r : rails) out.push_back(r.netdev);
  return out;
}

std::vector<std::string> Plan::ibdevs() const {
  std::vector<std::string> out;
  for (const auto& r : rails)
    if (!r.ibdev.empty() && std::find(out.begin(), out.end(), r.ibdev) == out.end())
      out.push_back(r.ibdev);
  std::sort(out.begin(), out.end());
  return out;
}

Json plan_to_json(const Plan& p) {
  Json rails = Json::array();
  for (const auto& r : p.rails)
    rails.push_back(Json{{"netdev", r.netdev},
                         {"ibdev", r.ibdev.empty() ? Json(nullptr) : Json(r.ibdev)},
                         {"port", r.port ? Json(*r.port) : Json(nullptr)},
                         {"gid_index", r.gid_index ? Json(*r.gid_index) : Json(nullptr)},
                         {"ipv4", r.ipv4}});
  Json sysfs = nullptr;
  if (!p.sysfs_tree.empty())
    sysfs = Json{{"tree", p.sysfs_tree}, {"mount_plan", p.sysfs_mount_plan}};
  return Json{
      {"format", kPlanFormat},
      {"node", p.node},
      {"host", p.host},
      {"created", p.created},
      {"launcher",
       {{"name", p.launcher},
        {"rank", p.rank},
        {"local_rank", p.local_rank},
        {"node_index", p.node_index}}},
      {"rails", rails},
      {"nccl_ib_hca", p.nccl_ib_hca},
      {"bootstrap_iface", p.bootstrap_iface.empty() ? Json(nullptr) : Json(p.bootstrap_iface)},
      {"sysfs", sysfs},
      {"env", p.env}};
}

Plan plan_from_json(const Json& j, const std::string& origin, int status) {
  const std::string not_plan = origin + " is not a gdr-harness plan of format " +
                               std::to_string(kPlanFormat) + " (run '" + kProg + " prepare' again)";
  if (!j.is_object() || !j.contains("format") || j["format"] != kPlanFormat)
    throw Failure(not_plan, status);
  try {
    Plan p;
    p.node = j.at("node").get<std::string>();
    p.host = j.value("host", "");
    p.created = j.value("created", "");
    if (j.contains("launcher") && j["launcher"].is_object()) {
      const auto& l = j["launcher"];
      p.launcher = l.value("name", "none");
      p.rank = l.value("rank", "");
      p.local_rank = l.value("local_rank", "");
      p.node_index = l.value("node_index", "");
    }
    for (const auto& r : j.at("rails")) {
      PlanRail rail;
      rail.netdev = r.at("netdev").get<std::string>();
      if (r.contains("ibdev") && !r["ibdev"].is_null()) rail.ibdev = r["ibdev"].get<std::string>();
      if (r.contains("port") && !r["port"].is_null()) rail.port = r["port"].get<unsigned>();
      if (r.contains("gid_index") && !r["gid_index"].is_null())
        rail.gid_index = r["gid_index"].get<int>();
      if (r.contains("ipv4")) rail.ipv4 = r["ipv4"].get<std::vector<std::string>>();
      if (rail.netdev.empty()) throw Failure(not_plan + ": a rail without a netdev", status);
      p.rails.push_back(std::move(rail));
    }
    p.nccl_ib_hca = j.value("nccl_ib_hca", "");
    if (j.contains("bootstrap_iface") && !j["bootstrap_iface"].is_null())
      p.bootstrap_iface = j["bootstrap_iface"].get<std::string>();
    if (j.contains("sysfs") && !j["sysfs"].is_null()) {
      p.sysfs_tree = j["sysfs"].at("tree").get<std::string>();
      p.sysfs_mount_plan = j["sysfs"].at("mount_plan").get<std::string>();
    }
    if (j.contains("env")) p.env = j["env"];
    return p;
  } catch (const Json::exception& e) {
    throw Failure(not_plan + ": " + e.what(), status);
  }
}

Plan load_plan(const std::string& path, int status) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    throw Failure(
        "no plan at " + path + ": run '" + std::string(kProg) + " prepare' on this node first",
        status);
  std::ifstream in(path);
  const Json j = Json::parse(in, nullptr, false);
  if (j.is_discarded())
    throw Failure(path + " is not a gdr-harness plan of format " + std::to_string(kPlanFormat) +
                      " (run '" + kProg + " prepare' again)",
                  status);
  return plan_from_json(j, path, status);
}

void save_plan(const Plan& p, const std::string& path) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << plan_to_json(p).dump(2) << "\n";
    if (!out) throw Failure("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw Failure("cannot write " + path);
}

}  // namespace gdrproxy::harness
