// Rail selection: every rule, table-driven over the pure selector, then end to end through the
// CLI on a constructed sysfs tree (the kernel's layout, built by the test: this machine has no
// RDMA device) and a real network namespace.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "netns/select.h"
#include "test_env.h"

namespace gdrproxy::netns::test {
namespace {

namespace fs = std::filesystem;

// IPv4-mapped GID as sysfs prints it.
std::string gid4(int a, int b, int c, int d) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", a, b, c, d);
  return buf;
}

RdmaNetdev dev(const std::string& netdev, const std::string& ibdev, unsigned port, int last_octet) {
  RdmaNetdev d{netdev, ibdev, port, {}};
  d.gids.push_back({0, "fe80:0000:0000:0000:0000:00ff:fe00:0001", "IB/RoCE v1", netdev, ""});
  d.gids.push_back({1, "fe80:0000:0000:0000:0000:00ff:fe00:0001", "RoCE v2", netdev, ""});
  if (last_octet >= 0) {
    std::string ip = "192.0.2." + std::to_string(last_octet);
    d.gids.push_back({2, gid4(192, 0, 2, last_octet), "IB/RoCE v1", netdev, ip});
    d.gids.push_back({3, gid4(192, 0, 2, last_octet), "RoCE v2", netdev, ip});
  }
  return d;
}

struct Case {
  std::string name;
  SelectOptions opts;
  std::vector<std::string> want;  // netdevs, in order
  std::string error;              // non-empty: selection must throw with this text
  std::string note;               // non-empty: a note containing this text
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

class Rules : public ::testing::TestWithParam<Case> {};

std::vector<RdmaNetdev> candidates() {
  return {dev("rdma0", "mlx5_0", 1, 10), dev("rdma1", "mlx5_1", 1, 11),
          dev("rdma2", "mlx5_2", 1, -1), dev("eth0", "mlx5_3", 1, 50),
          dev("ens9", "mlx5_4", 1, 60),  dev("gone0", "mlx5_5", 1, 70)};
}

LiveView live() {
  LiveView v;
  v.ipv4 = {{"rdma0", {"192.0.2.10"}},
            {"rdma1", {"192.0.2.11"}},
            {"rdma2", {}},
            {"eth0", {"192.0.2.50"}},
            {"ens9", {"192.0.2.60"}}};  // gone0: not in this netns
  v.bootstrap = {{"ens9", "carries the default route"}};
  return v;
}

SelectOptions opts(std::function<void(SelectOptions&)> f = {}) {
  SelectOptions o;
  if (f) f(o);
  return o;
}

TEST_P(Rules, Apply) {
  const Case& c = GetParam();
  if (!c.error.empty()) {
    try {
      select_rails_from(candidates(), live(), c.opts);
      FAIL() << "expected an error containing: " << c.error;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.error), std::string::npos) << e.what();
    }
    return;
  }
  Selection s = select_rails_from(candidates(), live(), c.opts);
  std::vector<std::string> got;
  for (const auto& r : s.rails) got.push_back(r.netdev);
  EXPECT_EQ(got, c.want);
  if (!c.note.empty()) {
    bool found = false;
    for (const auto& n : s.notes) found = found || n.find(c.note) != std::string::npos;
    EXPECT_TRUE(found) << "no note containing '" << c.note << "'";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Selection, Rules,
    ::testing::Values(Case{"default_regex_excludes_ethN",
                           opts(),
                           {"rdma0", "rdma1"},
                           "",
                           "eth0: excluded by regex ^eth[0-9]+$"},
                      Case{"empty_regex_disables_exclusion",
                           opts([](auto& o) { o.exclude_regex = ""; }),
                           {"rdma0", "rdma1", "eth0"},
                           "",
                           ""},
                      Case{"custom_regex",
                           opts([](auto& o) { o.exclude_regex = "^rdma1$"; }),
                           {"rdma0", "eth0"},
                           "",
                           "rdma1: excluded by regex"},
                      Case{"bad_regex_is_an_error",
                           opts([](auto& o) { o.exclude_regex = "(["; }),
                           {},
                           "bad exclusion regex",
                           ""},
                      Case{"include_wins_over_regex",
                           opts([](auto& o) { o.include = {"eth0"}; }),
                           {"eth0"},
                           "",
                           ""},
                      Case{"include_filters_real_records",
                           opts([](auto& o) {
                             o.include = {"rdma1", "rdma0"};
                           }),
                           {"rdma0", "rdma1"},
                           "",
                           "ens9: not in the include-list"},
                      Case{"include_of_non_rdma_netdev_is_an_error",
                           opts([](auto& o) {
                             o.include = {"rdma0", "veth7"};
                           }),
                           {},
                           "veth7: not backed by any RDMA device",
                           ""},
                      Case{"no_ipv4_skipped_with_note",
                           opts(),
                           {"rdma0", "rdma1"},
                           "",
                           "rdma2 (mlx5_2): no IPv4 address; skipped"},
                      Case{"no_ipv4_kept_on_request",
                           opts([](auto& o) { o.keep_no_ipv4 = true; }),
                           {"rdma0", "rdma1", "rdma2"},
                           "",
                           ""},
                      Case{"absent_from_namespace_skipped",
                           opts(),
                           {"rdma0", "rdma1"},
                           "",
                           "gone0 (mlx5_5): not in this network namespace"},
                      Case{"peer_intersection",
                           opts([](auto& o) {
                             o.peer = std::vector<std::string>{"rdma1", "rdma7"};
                           }),
                           {"rdma1"},
                           "",
                           "rdma0: the peer has no rail of that name"},
                      Case{"bootstrap_skipped_when_automatic",
                           opts([](auto& o) { o.exclude_regex = ""; }),
                           {"rdma0", "rdma1", "eth0"},
                           "",
                           "ens9: carries the default route; skipped"},
                      Case{"bootstrap_named_is_an_error",
                           opts([](auto& o) { o.include = {"ens9"}; }),
                           {},
                           "ens9: refusing to select it: it carries the default route",
                           ""},
                      Case{"bootstrap_allowed",
                           opts([](auto& o) {
                             o.include = {"ens9"};
                             o.allow_bootstrap = true;
                           }),
                           {"ens9"},
                           "",
                           ""}),
    [](const auto& param_info) { return param_info.param.name; });

TEST(Selection, KeepsRealMetadataAndDerivesNcclIbHca) {
  auto c = candidates();
  c.push_back(dev("rdma1b", "mlx5_1", 2, 12));  // a second port of mlx5_1
  LiveView v = live();
  v.ipv4["rdma1b"] = {"192.0.2.12"};
  Selection s = select_rails_from(c, v, opts([](auto& o) {
                                    o.include = {"rdma1", "rdma1b", "eth0"};
                                  }));
  ASSERT_EQ(s.rails.size(), 3u);
  EXPECT_EQ(s.rails[0].ibdev, "mlx5_1");
  EXPECT_EQ(s.rails[0].port, 1u);
  EXPECT_EQ(s.rails[0].gid_index, 3);
  EXPECT_EQ(s.rails[2].netdev, "rdma1b");
  EXPECT_EQ(s.rails[2].port, 2u);
  EXPECT_EQ(s.nccl_ib_hca, "=mlx5_1:1,mlx5_3:1,mlx5_1:2");
}

TEST(Selection, PlainRailsFollowTheSameRulesAndStayOutOfNcclIbHca) {
  // What select_rails adds with allow_plain_rails: netdevs no RDMA device backs.
  auto c = candidates();
  c.push_back(RdmaNetdev{"veth0", "", 0, {}});
  c.push_back(RdmaNetdev{"veth1", "", 0, {}});
  c.push_back(RdmaNetdev{"eth7", "", 0, {}});
  LiveView v = live();
  v.ipv4["veth0"] = {"198.51.100.1"};
  v.ipv4["veth1"] = {};
  v.ipv4["eth7"] = {"198.51.100.7"};
  Selection s = select_rails_from(c, v, opts([](auto& o) { o.allow_plain_rails = true; }));
  std::vector<std::string> got;
  for (const auto& r : s.rails) got.push_back(r.netdev);
  // The default regex drops eth7, veth1 has no IPv4; the RDMA-backed rails are as before.
  EXPECT_EQ(got, (std::vector<std::string>{"rdma0", "rdma1", "veth0"}));
  EXPECT_EQ(s.rails[2].ibdev, "");
  EXPECT_EQ(s.rails[2].gid_index, -1);
  EXPECT_EQ(s.nccl_ib_hca, "=mlx5_0:1,mlx5_1:1");
  bool noted = false;
  for (const auto& n : s.notes) noted = noted || n == "veth1: no IPv4 address; skipped";
  EXPECT_TRUE(noted);
  const Json j = selection_to_json(s);
  EXPECT_TRUE(j["rails"][2]["ibdev"].is_null());
  EXPECT_TRUE(j["rails"][2]["port"].is_null());
  EXPECT_NE(selection_to_text(s).find("veth0            -            -     -"), std::string::npos)
      << selection_to_text(s);
  // Named, a plain rail wins over the regex like any other; only plain rails: no NCCL_IB_HCA.
  Selection named = select_rails_from(c, v, opts([](auto& o) {
                                        o.allow_plain_rails = true;
                                        o.include = {"eth7", "veth0"};
                                      }));
  ASSERT_EQ(named.rails.size(), 2u);
  EXPECT_EQ(named.nccl_ib_hca, "");
  // A name that is no netdev at all is still an error.
  EXPECT_THROW(select_rails_from(c, v, opts([](auto& o) {
                                   o.allow_plain_rails = true;
                                   o.include = {"nosuch0"};
                                 })),
               Error);
}

TEST(Selection, GidIndexIsTheRoceV2EntryOfTheCurrentAddress) {
  RdmaNetdev d = dev("rdma0", "mlx5_0", 1, 10);
  d.gids.push_back({4, gid4(192, 0, 2, 99), "IB/RoCE v1", "rdma0", "192.0.2.99"});
  d.gids.push_back({5, gid4(192, 0, 2, 99), "RoCE v2", "rdma0", "192.0.2.99"});
  EXPECT_EQ(roce_v2_ipv4_gid_index(d, {"192.0.2.99"}), 5);
  EXPECT_EQ(roce_v2_ipv4_gid_index(d, {"192.0.2.10"}), 3);
  EXPECT_EQ(roce_v2_ipv4_gid_index(d, {}), 3);  // no match: the lowest RoCE v2 IPv4 entry
  EXPECT_EQ(roce_v2_ipv4_gid_index(dev("x", "m", 1, -1), {}), -1);
}

// A sysfs tree in the kernel's layout, constructed for the test (no RDMA hardware here).
// Unused GID slots read back as the zero GID; their type/ndev files, which fail with EINVAL on a
// real kernel, are empty here.
struct Tree {
  ScopedDir dir;
  std::string root() const { return dir.path() + "/sys"; }
  void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
  }
  void add(const std::string& ibdev, const std::string& bdf, const std::string& netdev,
           int last_octet) {
    fs::path pci = fs::path(root()) / "devices/pci0000:00" / bdf;
    fs::path ib = pci / "infiniband" / ibdev;
    fs::create_directories(pci / "net" / netdev);
    fs::create_directories(fs::path(root()) / "class/infiniband");
    fs::create_directory_symlink("../../devices/pci0000:00/" + bdf + "/infiniband/" + ibdev,
                                 fs::path(root()) / "class/infiniband" / ibdev);
    fs::create_directories(ib);
    fs::create_directory_symlink("../../../" + bdf, ib / "device");
    fs::path port = ib / "ports/1";
    write(port / "link_layer", "Ethernet");
    const std::string zero = "0000:0000:0000:0000:0000:0000:0000:0000";
    const std::string ll =
        "fe80:0000:0000:0000:0000:00ff:fe00:00" + std::to_string(10 + last_octet % 80);
    std::vector<std::tuple<std::string, std::string, std::string>> slots = {
        {ll, "IB/RoCE v1", netdev}, {ll, "RoCE v2", netdev}};
    if (last_octet >= 0) {
      slots.push_back({gid4(192, 0, 2, last_octet), "IB/RoCE v1", netdev});
      slots.push_back({gid4(192, 0, 2, last_octet), "RoCE v2", netdev});
    }
    while (slots.size() < 8) slots.push_back({zero, "", ""});
    for (size_t i = 0; i < slots.size(); ++i) {
      write(port / "gids" / std::to_string(i), std::get<0>(slots[i]));
      auto type = std::get<1>(slots[i]), ndev = std::get<2>(slots[i]);
      fs::create_directories(port / "gid_attrs/types");
      fs::create_directories(port / "gid_attrs/ndevs");
      std::ofstream(port / "gid_attrs/types" / std::to_string(i))
          << (type.empty() ? "" : type + "\n");
      std::ofstream(port / "gid_attrs/ndevs" / std::to_string(i))
          << (ndev.empty() ? "" : ndev + "\n");
    }
  }
};

TEST(SelectCli, ConstructedSysfsTreeAndRealNamespace) {
  HostTopology t(4, "gs");
  must(t.host.ip() + "addr flush dev rdma3");  // a rail without IPv4
  Tree tree;
  for (int i = 0; i < 4; ++i)
    tree.add("mlx5_" + std::to_string(i), "0000:0" + std::to_string(i + 1) + ":00.0",
             "rdma" + std::to_string(i), i == 3 ? -1 : 10 + i);
  tree.add("mlx5_4", "0000:09:00.0", "eth0", -1);
  // The enumeration itself keeps the kernel's facts.
  auto found = enumerate_rdma_netdevs(tree.root());
  ASSERT_EQ(found.size(), 5u);
  EXPECT_EQ(found[1].netdev, "rdma1");
  EXPECT_EQ(found[1].gids.size(), 4u);
  EXPECT_EQ(found[1].gids[3].ipv4, "192.0.2.11");

  std::string cmd = t.host.exec() + gdrproxy() + " netns select --sysfs-root " + tree.root();
  CmdResult r = sh(cmd + " --json 2>/dev/null");
  ASSERT_EQ(r.status, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rails"].size(), 3u) << r.out;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(j["rails"][i]["netdev"], "rdma" + std::to_string(i));
    EXPECT_EQ(j["rails"][i]["ibdev"], "mlx5_" + std::to_string(i));
    EXPECT_EQ(j["rails"][i]["port"], 1);
    EXPECT_EQ(j["rails"][i]["gid_index"], 3);
  }
  EXPECT_EQ(j["nccl_ib_hca"], "=mlx5_0:1,mlx5_1:1,mlx5_2:1");
  std::string notes = j["notes"].dump();
  EXPECT_NE(notes.find("rdma3 (mlx5_3): no IPv4 address; skipped"), std::string::npos) << notes;
  EXPECT_NE(notes.find("eth0: excluded by regex"), std::string::npos) << notes;
  // A captured tree is not this node: no RDMA netns mode is claimed for it (the VM stage checks
  // both modes on the live node, tests/vm/rdma_netns.sh).
  EXPECT_TRUE(j.contains("rdma_netns_mode") && j["rdma_netns_mode"].is_null()) << r.out;
  EXPECT_EQ(notes.find("RDMA netns mode"), std::string::npos) << notes;

  // Human output, with the note printed.
  r = sh(cmd);
  EXPECT_NE(r.out.find("note: rdma3 (mlx5_3): no IPv4 address; skipped"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1"), std::string::npos) << r.out;

  // Including eth0 explicitly: it carries the default route, so it is refused unless allowed.
  r = sh(cmd + " --include rdma1,eth0");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("eth0: refusing to select it: it carries the default route"),
            std::string::npos)
      << r.out;
  r = sh(cmd + " --include rdma1,eth0 --allow-bootstrap --keep-no-ipv4 --json 2>/dev/null");
  j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rails"].size(), 2u) << r.out;
  EXPECT_EQ(j["rails"][1]["ibdev"], "mlx5_4");

  // Peer intersection from the peer's own --json output.
  std::ofstream(tree.dir.path() + "/peer.json")
      << R"({"rails":[{"netdev":"rdma1"},{"netdev":"rdma2"},{"netdev":"rdma5"}]})";
  r = sh(cmd + " --peer-json " + tree.dir.path() + "/peer.json --json 2>/dev/null");
  j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rails"].size(), 2u) << r.out;
  EXPECT_EQ(j["nccl_ib_hca"], "=mlx5_1:1,mlx5_2:1");
}

}  // namespace
}  // namespace gdrproxy::netns::test
