// Times the two steps a container start pays for: snapshot (capture of a sysfs tree) and build
// (writing the filtered tree), on the example HGX H100 node. Prints min and median of N runs.
// usage: sysfs_bench SNAPSHOT_ROOT OUT_DIR [RUNS]
//   SNAPSHOT_ROOT  a file-system root with sys/ (the constructed HGX tree, or / for this host)
//   OUT_DIR        where trees are built (put it on tmpfs, as /run is in production)
// "build*" lines are builds with --live-ports (port directories left as mount points).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "sysfs/builder.h"
#include "sysfs/capture.h"
#include "sysfs/selection.h"

using namespace gdrproxy;
using namespace gdrproxy::sysfs;

namespace {

struct Stat {
  double min_ms, median_ms;
};

Stat time_runs(int runs, const std::function<void()>& body, const std::function<void()>& after) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    body();
    auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    after();
  }
  std::sort(ms.begin(), ms.end());
  return {ms.front(), ms[ms.size() / 2]};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s SNAPSHOT_ROOT OUT_DIR [RUNS]\n", argv[0]);
    return 2;
  }
  std::string root = argv[1], out = std::string(argv[2]) + "/bench-tree";
  int runs = argc > 3 ? std::atoi(argv[3]) : 20;
  Snapshot snap;
  Stat cap = time_runs(
      runs, [&] { snap = capture(root); }, [] {});
  std::printf("snapshot  %-28s %3zu PCI fns, %2zu RDMA devs: min %7.2f ms  median %7.2f ms\n",
              root.c_str(), snap.pci.size(), snap.ib.size(), cap.min_ms, cap.median_ms);

  struct Case {
    const char* name;
    SelectionRequest req;
  };
  SelectionRequest two;
  two.gpus_given = two.nics_given = true;
  two.gpus = {"0000:0f:00.0", "0000:2d:00.0"};
  two.nics = {"mlx5_0", "mlx5_1"};
  std::vector<Case> cases = {{"all GPUs and NICs", SelectionRequest{}}};
  if (snap.find_pci("0000:0f:00.0") && snap.find_ib("mlx5_1"))
    cases.push_back({"2 GPUs + 2 NICs", two});
  for (bool live : {false, true}) {
    for (const auto& c : cases) {
      Selection sel = select(snap, c.req);
      BuildResult last;
      Stat b = time_runs(
          runs,
          [&] {
            last = build_tree(snap, sel, {out, false, live});
          },
          [&] { remove_tree(out, nullptr); });
      std::printf("build%-5s %-28s %4zu files %3zu links:  min %7.2f ms  median %7.2f ms\n",
                  live ? "*" : "", c.name, last.files, last.links, b.min_ms, b.median_ms);
    }
  }
  return 0;
}
