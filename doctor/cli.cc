// `gdrproxy doctor` (see cli.h).
#include "doctor/cli.h"

#include <iostream>
#include <memory>

#include "base/command_failure.h"
#include "base/file_io.h"
#include "doctor/doctor.h"
#include "doctor/reference_versions.h"

namespace gdrproxy::doctor {
namespace {

struct Options {
  bool json = false;
  std::vector<int> pids;
  std::string rootfs;
  std::string peer;
  std::string sysfs_root = "/sys";
  std::string arp_profile = "multirail";
  std::string profile_dir;
  std::vector<std::string> only;
};

// The reference image's versions, from the built-in versions.json.
std::string reference_line() {
  std::string out = "\nReference workload image (configs/containers/workload), for --rootfs:\n ";
  try {
    const auto j = nlohmann::json::parse(kReferenceVersionsJson);
    for (const auto& [key, c] : j.at("components").items()) {
      std::string floor;
      for (const auto& b : c.value("below", nlohmann::json::array()))
        floor = b.value("version", floor);
      out += " " + c.value("name", key) + " " +
             (c.contains("version") && c.at("version").is_string()
                  ? c.at("version").get<std::string>()
                  : "of the base image (>= " + floor + ")") +
             ",";
    }
    out.back() = '\n';
  } catch (const std::exception& e) {
    out += std::string(" unreadable: ") + e.what() + "\n";
  }
  return out;
}

std::string footer() {
  std::string f =
      "\nEach check prints one line: PASS, WARN or FAIL, what it found, and a one-line fix.\n"
      "Exit status: 0 every check passed, 1 some warning, 2 some failure (or a usage error).\n"
      "A check that cannot look (no device, no --pid) says so as a WARN, never as a PASS.\n\n"
      "Families (--only NAME,...):\n";
  for (const auto& fam : families()) f += "  " + std::string(fam.name) + ": " + fam.what + "\n";
  f += reference_line();
  f +=
      "\nExamples:\n"
      "  gdrproxy doctor                              # this node, as this process sees it\n"
      "  gdrproxy doctor --only lib                   # probe: what this node's loader binds\n"
      "  gdrproxy doctor --pid $(pgrep -f all_reduce) # a running rank: its libraries and env\n"
      "  gdrproxy doctor --pid 101 --pid 202          # two ranks: namespaces and boot ids agree?\n"
      "  gdrproxy doctor --rootfs /var/lib/img/rootfs # an image: NIXL's linkage and versions\n"
      "  gdrproxy doctor --json > a.json; gdrproxy doctor --peer a.json   # node against node\n";
  return f;
}

// One run of the checks `opts` ask for: the report on stdout and its exit status (2 for an
// unknown family, as for a usage error).
int run(const Options& opts) {
  Context ctx = node_context();
  ctx.sysfs_root = opts.sysfs_root;
  ctx.pids = opts.pids;
  ctx.rootfs = opts.rootfs;
  ctx.peer = opts.peer;
  ctx.arp_profile = opts.arp_profile;
  ctx.arp_profile_dir = opts.profile_dir;
  if (!ctx.pids.empty()) {
    const int pid = ctx.pids.front();
    auto r = read_file(ctx.proc_root + "/" + std::to_string(pid) + "/environ");
    if (r.data) {
      ctx.env = parse_environ(*r.data);
      ctx.env_origin = "environ of pid " + std::to_string(pid);
      auto home = ctx.env.find("HOME");
      ctx.home = home == ctx.env.end() ? "" : home->second;
    }
  }
  for (const auto& name : opts.only) {
    bool known = false;
    for (const auto& f : families()) known = known || name == f.name;
    if (!known) {
      std::cerr << "gdrproxy doctor: unknown family " << quote_value(name) << "\n";
      return 2;
    }
  }
  Report report = run_doctor(ctx, opts.only);
  if (opts.json)
    std::cout << report.to_json().dump(2) << "\n";
  else
    std::cout << report.to_text();
  return report.exit_code();
}

}  // namespace

void register_commands(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "doctor",
      "Diagnose this node, a container or a running job: NCCL env, RDMA rails, bound libraries,\n"
      "image linkage, NVIDIA driver, namespaces; one PASS/WARN/FAIL line per check with a fix.");
  cmd->footer(footer());
  cmd->add_flag("--json", opts->json, "Print the report as JSON (for --peer on another node)");
  cmd->add_option("--pid", opts->pids,
                  "A process of the job (repeatable): its mapped libraries, environment, "
                  "namespaces and boot id are checked (without --pid a short-lived probe child "
                  "loads the job's libraries instead)")
      ->check(CLI::PositiveNumber);
  cmd->add_option(
      "--rootfs", opts->rootfs,
      "An image's root file system: resolve its NIXL plugins' DT_NEEDED as ld.so would and "
      "compare its UCX/libfabric/NIXL/NCCL versions with the reference image's");
  cmd->add_option(
      "--peer", opts->peer,
      "Another node's `gdrproxy doctor --json`: compare rails, HCAs, libraries, NCCL env, boot id");
  cmd->add_option("--sysfs-root", opts->sysfs_root, "The sysfs tree to read (a captured tree)")
      ->capture_default_str();
  cmd->add_option("--arp-profile", opts->arp_profile,
                  "The rail ARP profile to compare against (configs/netns/NAME.json)")
      ->capture_default_str();
  cmd->add_option("--profile-dir", opts->profile_dir,
                  "Directory searched first for ARP profiles (as `netns move --profile-dir`)");
  cmd->add_option("--only", opts->only, "Run only these families")->delimiter(',');
  // A check that throws (it should report instead) fails the run as a failure does: status 2.
  cmd->callback([opts, &exit_code] {
    exit_code = run_guarded("gdrproxy doctor", 2, [&] { return run(*opts); });
  });
}

}  // namespace gdrproxy::doctor
