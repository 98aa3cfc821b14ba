// The versioned JSON model: round trip, and clear refusals of bad or newer documents.
#include <gtest/gtest.h>

#include "base/error.h"
#include "demo/example_snapshot.h"
#include "sysfs/snapshot.h"
#include "tests/sysfs/test_util.h"

namespace gdrproxy::sysfs {
namespace {

using nlohmann::json;

std::string error_of(const json& j) {
  try {
    snapshot_from_json(j);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SnapshotJson, ExampleRoundTrips) {
  json j = json::parse(demo::example_snapshot_json());
  Snapshot s = snapshot_from_json(j);
  EXPECT_EQ(s.pci.size(), 90u);
  EXPECT_EQ(s.ib.size(), 8u);
  EXPECT_EQ(to_json(s), j);
  // Exact bytes are kept, trailing newline included.
  EXPECT_EQ(s.find_pci("0000:0f:00.0")->attrs.at("device"), "0x2330\n");
  EXPECT_EQ(s.find_pci("0000:08:00.0")->config.size(), 256u);
}

TEST(SnapshotJson, RefusesNewerSchema) {
  json j = json::parse(demo::example_snapshot_json());
  j["version"] = kSnapshotVersion + 1;
  EXPECT_NE(error_of(j).find("newer than this gdrproxy understands"), std::string::npos);
  j["version"] = 1;
  j["schema"] = "something.else";
  EXPECT_NE(error_of(j).find("schema is 'something.else'"), std::string::npos);
}

TEST(SnapshotJson, NamesTheBadField) {
  json j = json::parse(demo::example_snapshot_json());
  j["pci"][3].erase("path");
  EXPECT_NE(
      error_of(j).find("pci[" + j["pci"][3]["bdf"].get<std::string>() + "]: missing field 'path'"),
      std::string::npos);
  j = json::parse(demo::example_snapshot_json());
  j["pci"][0]["path"] = "pci0000:07/../../etc/0000:07:01.0";
  EXPECT_NE(error_of(j).find("bad relative path"), std::string::npos);
  j = json::parse(demo::example_snapshot_json());
  j["pci"][0]["attrs"]["../x"] = "1";
  EXPECT_NE(error_of(j).find("bad file name"), std::string::npos);
  j = json::parse(demo::example_snapshot_json());
  j["infiniband"][0]["pci"] = "0000:ff:00.0";
  EXPECT_NE(error_of(j).find("is not in pci[]"), std::string::npos);
  j = json::parse(demo::example_snapshot_json());
  j["infiniband"][0]["ports"][0]["gids"]["4000"] = "fe80::";
  EXPECT_NE(error_of(j).find("index beyond table length"), std::string::npos);
  j = json::parse(demo::example_snapshot_json());
  j["pci"][0]["driver"] = "../../../etc";
  EXPECT_NE(error_of(j).find("bad name"), std::string::npos);
  j = json::parse(demo::example_snapshot_json());
  j["pci"][0]["child_buses"][0] = "../x";
  EXPECT_NE(error_of(j).find("bad bus name"), std::string::npos);
  j = json::parse(demo::example_snapshot_json());
  j["pci"][0]["config"] = "zz";
  EXPECT_NE(error_of(j).find("not a hex string"), std::string::npos);
}

TEST(SnapshotJson, LoadNamesTheFile) {
  test::TempDir t;
  test::write_file(t / "bad.json", "{ not json");
  try {
    load_snapshot(t / "bad.json");
    FAIL() << "loaded invalid JSON";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(t / "bad.json"), std::string::npos);
  }
  EXPECT_THROW(load_snapshot(t / "missing.json"), Error);
}

}  // namespace
}  // namespace gdrproxy::sysfs
