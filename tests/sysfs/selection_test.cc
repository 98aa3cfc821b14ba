// Default NIC selection: which RDMA devices have a usable GID (the rule depends on the port's link
// layer) and the notes that say which rule left a device out.
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "base/file_io.h"
#include "sysfs/builder.h"
#include "sysfs/capture.h"
#include "sysfs/selection.h"
#include "tests/sysfs/test_util.h"

namespace gdrproxy::sysfs {
namespace {

const char* const kLinkLocal = "fe80:0000:0000:0000:a288:c2ff:fe04:0014\n";
const char* const kIpv4 = "0000:0000:0000:0000:0000:ffff:c633:640e\n";
const char* const kZero = "0000:0000:0000:0000:0000:0000:0000:0000\n";
const char* const kLeftOut = "; left out (name it in --nics to expose it anyway)";

// Port `num` with the given link_layer attribute ("" leaves it out) and an empty GID table.
IbPort port(int num, const std::string& link_layer) {
  IbPort p;
  p.num = num;
  if (!link_layer.empty()) p.attrs["link_layer"] = link_layer + "\n";
  p.gid_table_len = 16;
  return p;
}

IbDevice device(std::vector<IbPort> ports) {
  IbDevice d;
  d.name = "mlx5_9";
  d.pci = "0000:0c:00.0";
  d.ports = std::move(ports);
  return d;
}

std::vector<std::string> names(const Selection& sel) {
  std::vector<std::string> out;
  for (const auto* d : sel.ib) out.push_back(d->name);
  return out;
}

TEST(Selection, RocePortNeedsANonZeroGidBoundToANetdev) {
  IbPort p = port(1, "Ethernet");
  p.gids = {{0, kLinkLocal}, {1, kLinkLocal}, {2, kIpv4}, {3, kIpv4}};
  EXPECT_FALSE(has_usable_gid(device({p}))) << "non-zero GIDs, none bound to a netdev";
  p.gid_ndevs = {{0, "\n"}, {1, ""}};  // a copy of a kernel's EINVAL entries reads empty
  EXPECT_FALSE(has_usable_gid(device({p}))) << "netdev entries that are empty";
  p.gid_ndevs = {{5, "rdma4\n"}};  // a netdev on a zero GID slot does not make it usable
  EXPECT_FALSE(has_usable_gid(device({p}))) << "netdev bound to a zero GID only";
  p.gids[5] = kZero;  // written out explicitly (a hand-made snapshot) it is still zero
  EXPECT_FALSE(has_usable_gid(device({p}))) << "netdev bound to an explicit zero GID only";
  p.gid_ndevs[3] = "rdma4\n";
  EXPECT_TRUE(has_usable_gid(device({p}))) << "one non-zero GID bound to a netdev";
}

TEST(Selection, InfinibandPortNeedsOnlyANonZeroGid) {
  IbPort p = port(1, "InfiniBand");
  EXPECT_FALSE(has_usable_gid(device({p})));
  p.gids[0] = kZero;
  EXPECT_FALSE(has_usable_gid(device({p}))) << "an explicit zero GID is not usable";
  p.gids[1] = "fe80:0000:0000:0000:b83f:d203:0010:6d94\n";  // no netdev: InfiniBand has none
  EXPECT_TRUE(has_usable_gid(device({p})));
}

// The kernel prints "Unknown" for a link layer it cannot name; a hand-made snapshot may have none.
// Neither is RoCE, where NCCL picks a GID by its netdev: a non-zero GID is enough.
TEST(Selection, UnknownOrMissingLinkLayerNeedsOnlyANonZeroGid) {
  for (const char* ll : {"Unknown", ""}) {
    IbPort p = port(1, ll);
    EXPECT_FALSE(has_usable_gid(device({p}))) << ll;
    p.gids[0] = kLinkLocal;
    EXPECT_TRUE(has_usable_gid(device({p}))) << ll;
  }
}

TEST(Selection, DeviceIsUsableIfAnyPortIs) {
  IbPort roce = port(1, "Ethernet");
  roce.gids[0] = kLinkLocal;  // no netdev
  IbPort ib = port(2, "InfiniBand");
  EXPECT_FALSE(has_usable_gid(device({roce, ib})));
  ib.gids[0] = "fe80:0000:0000:0000:b83f:d203:0010:6d94\n";
  EXPECT_TRUE(has_usable_gid(device({roce, ib})));
  EXPECT_FALSE(has_usable_gid(device({})));
}

// The constructed HGX node with both link layers: mlx5_0..3 InfiniBand (mlx5_3 with an all-zero
// GID table), mlx5_4..7 RoCE (mlx5_5's GIDs bound to no netdev, mlx5_6's IPv4 GIDs only).
TEST(Selection, DefaultDropsRoceDevicesWhoseGidsHaveNoNetdev) {
  test::TempDir t;
  ASSERT_TRUE(test::prepare_fixture("hgx-mixed8", t / "src"));
  Snapshot s = capture(t / "src");
  ASSERT_EQ(s.ib.size(), 8u);
  Selection sel = select(s, SelectionRequest{});
  EXPECT_EQ(names(sel),
            (std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_4", "mlx5_6", "mlx5_7"}));
  EXPECT_EQ(
      sel.notes,
      (std::vector<std::string>{
          std::string("mlx5_3: no usable GID: InfiniBand port 1 has no non-zero GID") + kLeftOut,
          std::string("mlx5_5: no usable GID: RoCE (Ethernet) port 1 has no non-zero GID "
                      "bound to a netdev") +
              kLeftOut}));
  std::vector<std::string> nets;
  for (const auto* n : sel.net) nets.push_back(n->name);
  std::sort(nets.begin(), nets.end());
  EXPECT_EQ(nets, (std::vector<std::string>{"ib0", "ib1", "ib2", "rdma4", "rdma6", "rdma7"}));
  // Named in --nics they are exposed all the same, with the precise reason logged.
  SelectionRequest asked;
  asked.nics_given = true;
  asked.nics = {"mlx5_5", "mlx5_3"};
  sel = select(s, asked);
  EXPECT_EQ(names(sel), (std::vector<std::string>{"mlx5_3", "mlx5_5"}));
  EXPECT_EQ(sel.notes, (std::vector<std::string>{
                           "mlx5_5: no usable GID: RoCE (Ethernet) port 1 has no non-zero GID "
                           "bound to a netdev; exposed because it was asked for",
                           "mlx5_3: no usable GID: InfiniBand port 1 has no non-zero GID; "
                           "exposed because it was asked for"}));
}

// Soft-iWARP on a NIC's netdev hangs off the NIC's PCI function (siw's parent is the netdev's
// parent), like the NIC's own RDMA device: granting the NIC must not show it. It appears in the
// tenant's tree only when it is granted itself.
TEST(Selection, SoftwareDeviceOnAGrantedFunctionOnlyWhenNamed) {
  test::TempDir t;
  ASSERT_TRUE(test::prepare_fixture("hgx-roce16", t / "src"));
  const std::string rel =
      "devices/pci0000:07/0000:07:01.0/0000:08:00.0/0000:09:00.0/0000:0a:00.0/0000:0b:00.0/"
      "0000:0c:00.1";
  const std::string fn = t / "src/sys/" + rel;
  const std::string siw = fn + "/infiniband/siw0", uv = fn + "/infiniband_verbs/uverbs99";
  std::filesystem::create_directories(siw + "/ports/1/gids");
  std::filesystem::create_directories(uv);
  test::write_file(siw + "/node_type", "4: RNIC\n");
  test::write_file(siw + "/node_desc", "Software iWARP stack\n");
  test::write_file(siw + "/ports/1/link_layer", "Ethernet\n");
  test::write_file(siw + "/ports/1/gids/0", "a288:c2ff:fe04:0014:0000:0000:0000:0000\n");
  test::write_file(uv + "/ibdev", "siw0\n");
  test::write_file(uv + "/dev", "231:99\n");
  ASSERT_EQ(::symlink("../../devices/pci0000:07/0000:07:01.0/0000:08:00.0/0000:09:00.0/"
                      "0000:0a:00.0/0000:0b:00.0/0000:0c:00.1/infiniband/siw0",
                      (t / "src/sys/class/infiniband/siw0").c_str()),
            0);
  const Snapshot s = capture(t / "src");
  ASSERT_NE(s.find_ib("siw0"), nullptr);
  EXPECT_EQ(s.find_ib("siw0")->pci, s.find_ib("mlx5_1")->pci);

  SelectionRequest r;
  r.gpus_given = r.nics_given = true;
  r.nics = {"mlx5_1"};
  Selection sel = select(s, r);
  EXPECT_EQ(names(sel), (std::vector<std::string>{"mlx5_1"}));
  EXPECT_TRUE(std::any_of(sel.notes.begin(), sel.notes.end(), [](const std::string& n) {
    return n == "siw0: on 0000:0c:00.1 with a selected NIC but not named in --nics; left out";
  }));
  build_tree(s, sel, {t / "tree", false});
  EXPECT_TRUE(is_dir(t / "tree/class/infiniband/mlx5_1"));
  EXPECT_FALSE(exists_nofollow(t / "tree/class/infiniband/siw0"));
  EXPECT_FALSE(exists_nofollow(t / "tree/class/infiniband_verbs/uverbs99"));
  EXPECT_FALSE(exists_nofollow(t / "tree/" + rel + "/infiniband/siw0"));

  // Granted, it is there, verbs node included; an interface named alone brings no RDMA device.
  r.nics = {"mlx5_1", "siw0"};
  sel = select(s, r);
  EXPECT_EQ(names(sel), (std::vector<std::string>{"mlx5_1", "siw0"}));
  build_tree(s, sel, {t / "tree2", false});
  EXPECT_TRUE(is_dir(t / "tree2/class/infiniband/siw0"));
  EXPECT_EQ(read_text(t / "tree2/class/infiniband_verbs/uverbs99/ibdev"), "siw0\n");
  r.nics = {"rdma1"};
  sel = select(s, r);
  EXPECT_TRUE(names(sel).empty());
  ASSERT_EQ(sel.net.size(), 1u);
  EXPECT_EQ(sel.net[0]->name, "rdma1");
}

// The note names the rule each port failed, and says how a port of no known link layer is ruled.
TEST(Selection, NoteNamesTheRuleOfEveryPort) {
  Snapshot s = test::example_snapshot();  // 8 InfiniBand NICs, GID 0 set, no netdevs
  s.ib[0].ports[0].attrs["link_layer"] = "Ethernet\n";
  s.ib[1].ports[0].gids.clear();
  s.ib[1].ports.push_back(port(2, "Ethernet"));
  s.ib[1].ports.back().gids[0] = kIpv4;
  s.ib[2].ports[0].attrs["link_layer"] = "Unknown\n";  // GID 0 set: kept
  s.ib[3].ports[0].attrs.erase("link_layer");
  s.ib[3].ports[0].gids.clear();
  s.ib[4].ports.clear();
  s.ib[5].ports[0].attrs["link_layer"] = "Unknown\n";
  s.ib[5].ports[0].gids.clear();
  Selection sel = select(s, SelectionRequest{});
  EXPECT_EQ(names(sel), (std::vector<std::string>{"mlx5_2", "mlx5_6", "mlx5_7"}));
  EXPECT_EQ(sel.notes,
            (std::vector<std::string>{
                std::string("mlx5_0: no usable GID: RoCE (Ethernet) port 1 has no non-zero GID "
                            "bound to a netdev") +
                    kLeftOut,
                std::string("mlx5_1: no usable GID: InfiniBand port 1 has no non-zero GID, RoCE "
                            "(Ethernet) port 2 has no non-zero GID bound to a netdev") +
                    kLeftOut,
                std::string("mlx5_3: no usable GID: port 1 (no link layer, ruled as InfiniBand) "
                            "has no non-zero GID") +
                    kLeftOut,
                std::string("mlx5_4: no usable GID: no port") + kLeftOut,
                std::string("mlx5_5: no usable GID: port 1 (link layer Unknown, ruled as "
                            "InfiniBand) has no non-zero GID") +
                    kLeftOut}));
}

}  // namespace
}  // namespace gdrproxy::sysfs
