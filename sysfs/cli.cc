// The `gdrproxy sysfs ...` subcommands: thin wrappers over capture, select, build, verify and
// mount-plan. Errors are printed with the path or device they concern; exit status 1 on error,
// 2 when `verify` finds violations.
#include "sysfs/cli.h"

#include <fstream>
#include <iostream>

#include "base/command_failure.h"
#include "base/error.h"
#include "sysfs/builder.h"
#include "sysfs/capture.h"
#include "sysfs/mount_plan.h"
#include "sysfs/nccl_view.h"
#include "sysfs/selection.h"
#include "sysfs/verify.h"

namespace gdrproxy::sysfs {
namespace {

struct SelectArgs {
  std::string gpus, nics;
  void add(CLI::App* c) {
    c->add_option("--gpus", gpus,
                  "GPU BDFs to expose, comma separated (default: every NVIDIA GPU; 'none')");
    c->add_option("--nics", nics,
                  "RDMA devices or interfaces to expose, comma separated (default: every RDMA "
                  "device with a usable GID; 'none')");
  }
  SelectionRequest request(CLI::App* c) const {
    SelectionRequest r;
    r.gpus_given = c->count("--gpus") > 0;
    r.gpus = split_list(gpus);
    r.nics_given = c->count("--nics") > 0;
    r.nics = split_list(nics);
    return r;
  }
};

void print_notes(const std::vector<std::string>& notes, const char* what) {
  for (const auto& n : notes) std::cerr << "gdrproxy sysfs " << what << ": " << n << "\n";
}

}  // namespace

void register_commands(CLI::App& app, int& exit_code) {
  auto* sys = app.add_subcommand("sysfs", "Synthetic sysfs: snapshot, build, verify, mount-plan");
  sys->require_subcommand(1);

  // snapshot
  static std::string snap_root = "/", snap_out;
  auto* snap = sys->add_subcommand("snapshot", "Record the host's PCI/RDMA/net/NUMA sysfs as JSON");
  snap->add_option("--root", snap_root, "File-system root holding sys/ (default /)");
  snap->add_option("-o,--output", snap_out, "Output file ('-' for stdout)")->required();
  snap->callback([&exit_code] {
    exit_code = run_guarded("gdrproxy sysfs snapshot", 1, [&] {
      Snapshot s = capture(snap_root);
      print_notes(s.omissions, "snapshot");
      save_snapshot(s, snap_out);
      std::cerr << "gdrproxy sysfs snapshot: " << s.pci.size() << " PCI functions, " << s.ib.size()
                << " RDMA devices, " << s.net.size() << " interfaces, " << s.numa.size()
                << " NUMA nodes, " << s.omissions.size() << " omissions\n";
      return 0;
    });
  });

  // build
  static std::string build_snap, build_out;
  static bool build_force = false, build_live = false;
  static SelectArgs build_sel;
  auto* build = sys->add_subcommand("build", "Write a filtered sysfs tree from a snapshot");
  build->add_option("--snapshot", build_snap, "Snapshot JSON")->required();
  build->add_option("--out", build_out, "Tree directory to create")->required();
  build->add_flag("--force", build_force, "Replace an existing tree atomically");
  build->add_flag("--live-ports", build_live,
                  "Leave RDMA port directories empty as mount points for `mount-plan` (the plan "
                  "must be applied before use)");
  build_sel.add(build);
  build->callback([&exit_code, build] {
    exit_code = run_guarded("gdrproxy sysfs build", 1, [&] {
      Snapshot s = load_snapshot(build_snap);
      Selection sel = select(s, build_sel.request(build));
      BuildResult r = build_tree(s, sel, {build_out, build_force, build_live});
      print_notes(r.notes, "build");
      std::cerr << "gdrproxy sysfs build: " << r.path << ": " << sel.gpus.size() << " GPUs, "
                << sel.ib.size() << " RDMA devices, " << sel.pci.size() << " PCI functions ("
                << r.dirs << " dirs, " << r.files << " files, " << r.links << " links)\n";
      return 0;
    });
  });

  // verify
  static std::string verify_dir;
  auto* verify =
      sys->add_subcommand("verify", "Check a tree against the invariants consumers need");
  verify->add_option("dir", verify_dir, "Tree root (what is mounted at /sys)")->required();
  verify->callback([&exit_code] {
    auto v = verify_tree(verify_dir);
    for (const auto& x : v) std::cout << verify_dir << "/" << x.path << ": " << x.message << "\n";
    if (!v.empty()) {
      std::cerr << "gdrproxy sysfs verify: " << v.size() << " violation(s)\n";
      exit_code = 2;
    }
  });

  // mount-plan
  static std::string plan_snap, plan_tree, plan_host_root = "/";
  static SelectArgs plan_sel;
  auto* plan = sys->add_subcommand("mount-plan",
                                   "Print the read-only bind mounts that keep RDMA "
                                   "port state live (JSON, for the OCI hook)");
  plan->add_option("--snapshot", plan_snap, "Snapshot JSON the tree was built from")->required();
  plan->add_option("--tree", plan_tree, "The built tree")->required();
  plan->add_option("--host-root", plan_host_root, "Root the host paths are under (default /)");
  plan_sel.add(plan);
  plan->callback([&exit_code, plan] {
    exit_code = run_guarded("gdrproxy sysfs mount-plan", 1, [&] {
      Snapshot s = load_snapshot(plan_snap);
      Selection sel = select(s, plan_sel.request(plan));
      MountPlan p = make_mount_plan(s, sel, plan_tree, plan_host_root);
      std::cout << to_json(p).dump(2) << "\n";
      return 0;
    });
  });

  // mount: apply a plan in the current mount namespace
  static std::string mnt_plan, mnt_at, mnt_root;
  auto* mnt = sys->add_subcommand(
      "mount",
      "Apply a mount plan in the current mount namespace (run inside a private one, as "
      "an OCI hook or `unshare -m` does), optionally mounting the tree at --at");
  mnt->add_option("--plan", mnt_plan, "Plan JSON from mount-plan")->required();
  mnt->add_option("--at", mnt_at,
                  "Where to bind the finished tree read-only: /sys with --root, else a full path\n"
                  "(no symlink is ever followed in it)");
  mnt->add_option("--root", mnt_root,
                  "The container's rootfs (a host path); --at is then resolved inside it");
  mnt->callback([&exit_code] {
    exit_code = run_guarded("gdrproxy sysfs mount", 1, [&] {
      std::ifstream in(mnt_plan);
      if (!in) throw Error("cannot open " + mnt_plan);
      MountPlan p = mount_plan_from_json(nlohmann::json::parse(in));
      if (std::string e = apply_mount_plan(p, mnt_at, mnt_root); !e.empty()) throw Error(e);
      return 0;
    });
  });

  // affinity (NCCL's view of a tree)
  static std::string aff_dir;
  auto* aff =
      sys->add_subcommand("affinity", "Print the GPU-NIC path types NCCL derives from a tree");
  aff->add_option("dir", aff_dir, "Tree root")->required();
  aff->callback([&exit_code] {
    NcclView v = nccl_view(aff_dir);
    for (const auto& g : v.gpus)
      for (const auto& n : v.nics) {
        std::cout << g.name << " " << n.name << " " << to_string(path_type(g, n)) << "\n";
      }
    for (const auto& e : v.gpus)
      if (!e.error.empty()) {
        std::cerr << e.name << ": " << e.error << "\n";
        exit_code = 1;
      }
    for (const auto& e : v.nics)
      if (!e.error.empty()) {
        std::cerr << e.name << ": " << e.error << "\n";
        exit_code = 1;
      }
  });
}

}  // namespace gdrproxy::sysfs
