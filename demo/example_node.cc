// The example-node step of the demo; see example_node.h. It runs the same library calls as
// `gdrproxy sysfs build`, `verify` and `affinity`, on a temporary directory that is always removed.
#include "demo/example_node.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iomanip>
#include <map>

#include "base/file_io.h"
#include "demo/example_snapshot.h"
#include "sysfs/builder.h"
#include "sysfs/nccl_view.h"
#include "sysfs/selection.h"
#include "sysfs/snapshot.h"
#include "sysfs/verify.h"

namespace gdrproxy::demo {
namespace {

using namespace gdrproxy::sysfs;  // the synthetic sysfs library: this is its demo

// A temporary directory removed on scope exit.
class TempDir {
 public:
  TempDir() {
    // tmpfs where there is one: trees belong on tmpfs (/run in production), not on a disk.
    const char* base = std::getenv("TMPDIR");
    std::string dir = base && *base ? base : is_dir("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string t = dir + "/gdrproxy-demo-XXXXXX";
    if (::mkdtemp(t.data())) path_ = t;
  }
  ~TempDir() {
    if (!path_.empty()) remove_tree(path_, nullptr);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void print_table(std::ostream& out, const NcclView& v) {
  out << "  " << std::left << std::setw(14) << "GPU \\ NIC";
  for (const auto& n : v.nics) out << std::setw(9) << n.name;
  out << "\n";
  for (const auto& g : v.gpus) {
    out << "  " << std::setw(14) << g.name;
    for (const auto& n : v.nics) out << std::setw(9) << to_string(path_type(g, n));
    out << "\n";
  }
}

}  // namespace

int example_node(std::ostream& out) {
  try {
    Snapshot s = snapshot_from_json(nlohmann::json::parse(example_snapshot_json()));
    TempDir tmp;
    if (tmp.path().empty()) {
      out << "sysfs demo: cannot create a temporary directory\n";
      return 1;
    }
    // The host's view: every GPU and NIC.
    SelectionRequest all;
    build_tree(s, select(s, all), {tmp.path() + "/host", false});
    NcclView host = nccl_view(tmp.path() + "/host");
    out << "Example node (" << host.gpus.size() << " GPUs, " << host.nics.size()
        << " RDMA NICs, from configs/examples): host view, NCCL path types\n";
    print_table(out, host);

    // The container's selection: GPUs 0 and 1 and, for each, its closest NIC.
    SelectionRequest req;
    req.gpus_given = req.nics_given = true;
    for (size_t i = 0; i < 2 && i < host.gpus.size(); ++i) {
      const auto& g = host.gpus[i];
      req.gpus.push_back(g.bdf);
      const NcclEndpoint* best = nullptr;
      for (const auto& n : host.nics)
        if (!best || path_type(g, n) < path_type(g, *best)) best = &n;
      if (best) req.nics.push_back(best->name);
    }
    std::string tree = tmp.path() + "/container-sys";
    auto t0 = std::chrono::steady_clock::now();
    BuildResult r = build_tree(s, select(s, req), {tree, false});
    auto t1 = std::chrono::steady_clock::now();
    auto violations = verify_tree(tree);
    out << "\nContainer selection: GPUs";
    for (const auto& g : req.gpus) out << " " << g;
    out << ", NICs";
    for (const auto& n : req.nics) out << " " << n;
    out << "\n  built " << r.dirs << " dirs, " << r.files << " files, " << r.links << " links in "
        << std::fixed << std::setprecision(1)
        << std::chrono::duration<double, std::milli>(t1 - t0).count() << " ms; verify: "
        << (violations.empty() ? "clean" : std::to_string(violations.size()) + " violation(s)")
        << "\n";
    for (const auto& v : violations) out << "  " << v.path << ": " << v.message << "\n";
    NcclView ctr = nccl_view(tree);
    out << "Container view (what NCCL inside the sandbox derives):\n";
    print_table(out, ctr);
    // The container's path types must be the host's for the same pairs.
    bool same = true;
    for (const auto& g : ctr.gpus)
      for (const auto& n : ctr.nics)
        for (const auto& hg : host.gpus)
          for (const auto& hn : host.nics)
            if (hg.name == g.name && hn.name == n.name && path_type(g, n) != path_type(hg, hn))
              same = false;
    out << "  path types " << (same ? "match" : "DIFFER FROM") << " the host's\n";
    return violations.empty() && same ? 0 : 1;
  } catch (const std::exception& e) {
    out << "sysfs demo: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace gdrproxy::demo
