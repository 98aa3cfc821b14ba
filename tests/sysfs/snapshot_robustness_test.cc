// Damaged snapshots: random mutations of the example either load and build inside the output
// directory, or fail with an exception; never a crash, never a path outside the tree.
#include <cstdio>
#include <filesystem>
#include <random>

#include <gtest/gtest.h>

#include "base/file_io.h"
#include "demo/example_snapshot.h"
#include "sysfs/builder.h"
#include "sysfs/selection.h"
#include "sysfs/snapshot.h"
#include "tests/sysfs/test_util.h"

namespace gdrproxy::sysfs {
namespace {

using nlohmann::json;

// Every JSON pointer in `j` (objects and arrays, depth first).
void pointers(const json& j, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
  out.push_back(at);
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it) pointers(it.value(), at / it.key(), out);
  else if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i) pointers(j[i], at / i, out);
}

TEST(SnapshotRobustness, RandomMutationsFailCleanly) {
  const json base = json::parse(demo::example_snapshot_json());
  std::vector<json::json_pointer> all;
  pointers(base, json::json_pointer(), all);
  const json replacements[] = {
      nullptr,        7,    -1, "", "..", "../../etc", "/abs", "a/b", json::object(), json::array(),
      "0000:zz:00.0", 99999};
  std::mt19937 rng(20261121);
  test::TempDir t;
  int loaded = 0, refused = 0;
  for (int i = 0; i < 200; ++i) {
    json j = base;
    const auto& p = all[rng() % all.size()];
    if (p.empty()) continue;
    if (rng() % 4 == 0) {
      j[p.parent_pointer()].is_object() ? (void)j[p.parent_pointer()].erase(p.back())
                                        : (void)(j[p] = nullptr);
    } else {
      j[p] = replacements[rng() % std::size(replacements)];
    }
    std::string out = t / ("x/tree" + std::to_string(i));
    try {
      Snapshot s = snapshot_from_json(j);
      ++loaded;
      ASSERT_TRUE(std::filesystem::create_directories(t / "x") || is_dir(t / "x"));
      build_tree(s, select(s, SelectionRequest{}), {out, false});
      remove_tree(out, nullptr);
    } catch (const std::exception&) {
      ++refused;
    }
    // Nothing may appear beside the output directory (a "../" escaping the tree would).
    for (const auto& name : list_dir(t.path())) ASSERT_EQ(name, "x") << "after mutation " << p;
    for (const auto& name : list_dir(t / "x"))
      ASSERT_EQ(name.rfind(".tree", 0), std::string::npos) << "temporary left behind: " << name;
  }
  std::printf("mutations: %d loaded, %d refused\n", loaded, refused);
  EXPECT_GT(refused, 30);
  EXPECT_GT(loaded, 10);
}

}  // namespace
}  // namespace gdrproxy::sysfs
