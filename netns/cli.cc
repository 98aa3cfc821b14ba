// `gdrproxy netns move|restore|select`: option parsing and printing only; the work is in
// move.cc, restore.cc and select.cc.
#include "netns/cli.h"

#include <fstream>
#include <iostream>
#include <sstream>

#include "base/command_failure.h"
#include "base/error.h"
#include "base/lists.h"
#include "netns/move.h"
#include "netns/restore.h"
#include "netns/select.h"

namespace gdrproxy::netns {
namespace {

template <typename Fn>
void run_reporting(int& exit_code, Fn fn) {
  exit_code = run_guarded("gdrproxy netns", 1, fn, OtherExceptions::kUnexpected);
}

void add_move(CLI::App& netns, int& exit_code) {
  auto* cmd = netns.add_subcommand(
      "move",
      "Journal, then move rails into a network namespace and configure them there.\n"
      "A rail's soft-RoCE (rxe) device, which the kernel unregisters when its netdev leaves a\n"
      "namespace, is made again with the same name on the rail in the target (one line each);\n"
      "restore makes it again on the host. It may get another uverbs node: name grants after.\n"
      "In exclusive RDMA netns mode (rdma system show) a rail's RDMA devices go with it and\n"
      "restore brings them back; a device the kernel will not move fails the move, rolled back.\n"
      "Example: gdrproxy netns move --pid 4242 --ifaces rdma0,rdma1 --journal "
      "/var/lib/gdrproxy/j.json");
  auto opts = std::make_shared<MoveOptions>();
  auto ifaces = std::make_shared<std::string>();
  auto bootstrap = std::make_shared<std::string>();
  auto* pid =
      cmd->add_option("--pid", opts->target_pid, "Target: the network namespace of this process");
  auto* path = cmd->add_option("--netns", opts->target_path,
                               "Target: a network namespace file (/run/netns/NAME)");
  pid->excludes(path);
  cmd->add_option("--ifaces", *ifaces, "Comma-separated interfaces to move")->required();
  cmd->add_option("--arp-profile", opts->profile,
                  "ARP profile name (configs/netns/NAME.json) or path")
      ->capture_default_str();
  cmd->add_option("--profile-dir", opts->profile_dir, "Directory searched first for ARP profiles");
  cmd->add_option("--journal", opts->journal, "Journal file written before any change")->required();
  cmd->add_flag("--allow-bootstrap", opts->allow_bootstrap,
                "Allow moving the interface with the default route or a bootstrap address");
  cmd->add_option("--bootstrap-addr", *bootstrap,
                  "Comma-separated addresses whose interface must stay");
  cmd->callback([opts, ifaces, bootstrap, &exit_code] {
    run_reporting(exit_code, [&] {
      if (!opts->target_pid && opts->target_path.empty())
        throw Error("give the target with --pid or --netns");
      opts->ifaces = split_list(*ifaces);
      opts->bootstrap_addrs = split_list(*bootstrap);
      move_rails(*opts, std::cerr);
      return 0;
    });
  });
}

void add_restore(CLI::App& netns, int& exit_code) {
  auto* cmd = netns.add_subcommand(
      "restore",
      "Return journaled rails to their namespace with their original configuration.\n"
      "Example: gdrproxy netns restore --journal /var/lib/gdrproxy/j.json");
  auto journal = std::make_shared<std::string>();
  cmd->add_option("--journal", *journal, "Journal written by move")->required();
  cmd->callback([journal, &exit_code] {
    run_reporting(exit_code, [&] {
      int problems = restore_command(*journal, std::cerr);
      if (problems)
        std::cerr << "gdrproxy netns: " << problems
                  << " problem(s): interface(s) not restored or link(s) refused\n";
      return problems ? 2 : 0;
    });
  });
}

void add_select(CLI::App& netns, int& exit_code) {
  auto* cmd = netns.add_subcommand(
      "select",
      "Choose the RoCE rails of this node and derive NCCL_IB_HCA; say the RDMA netns mode.\n"
      "Example: gdrproxy netns select --exclude '^eth[0-9]+$' --json");
  auto opts = std::make_shared<SelectOptions>();
  auto include = std::make_shared<std::string>();
  auto peer = std::make_shared<std::string>();
  auto peer_json = std::make_shared<std::string>();
  auto bootstrap = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("--sysfs-root", opts->sysfs_root,
                  "Root of the sysfs tree to read (a captured tree in tests)")
      ->capture_default_str();
  cmd->add_option("--exclude", opts->exclude_regex,
                  "Exclusion regex on netdev names; empty disables")
      ->capture_default_str();
  cmd->add_option("--include", *include, "Comma-separated netdevs to select (wins over --exclude)");
  cmd->add_flag("--keep-no-ipv4", opts->keep_no_ipv4, "Keep netdevs without an IPv4 address");
  auto* p1 = cmd->add_option("--peer", *peer,
                             "Comma-separated rails of the peer node (intersect with them)");
  auto* p2 = cmd->add_option("--peer-json", *peer_json, "The peer's `select --json` output file");
  p1->excludes(p2);
  cmd->add_option("--bootstrap-addr", *bootstrap,
                  "Comma-separated addresses whose interface must stay");
  cmd->add_flag("--allow-bootstrap", opts->allow_bootstrap,
                "Allow the default-route/bootstrap interface");
  cmd->add_flag("--allow-plain-rails", opts->allow_plain_rails,
                "Netdevs no RDMA device backs are candidates too (test rigs: veths): shown with\n"
                "IBDEV -, never in NCCL_IB_HCA");
  cmd->add_flag("--json", *json, "Print JSON");
  cmd->callback([=, &exit_code] {
    run_reporting(exit_code, [&] {
      opts->include = split_list(*include);
      opts->bootstrap_addrs = split_list(*bootstrap);
      if (!peer->empty()) opts->peer = split_list(*peer);
      if (!peer_json->empty()) {
        std::ifstream in(*peer_json);
        if (!in) throw Error("cannot read peer list " + *peer_json);
        Json j;
        try {
          j = Json::parse(in);
        } catch (const std::exception& e) {
          throw Error("peer list " + *peer_json + " is not JSON: " + e.what());
        }
        opts->peer = peer_names_from_json(j, *peer_json);
      }
      Selection s = select_rails(*opts);
      if (*json) {
        std::cout << selection_to_json(s).dump(2) << "\n";
      } else {
        for (const auto& n : s.notes) std::cerr << "note: " << n << "\n";
        std::cout << selection_to_text(s);
      }
      return s.rails.empty() ? 3 : 0;
    });
  });
}

}  // namespace

void register_commands(CLI::App& app, int& exit_code) {
  auto* netns = app.add_subcommand(
      "netns", "RoCE rail launcher: move rails into container network namespaces");
  netns->require_subcommand(1);
  add_move(*netns, exit_code);
  add_restore(*netns, exit_code);
  add_select(*netns, exit_code);
}

}  // namespace gdrproxy::netns
