// The runtime shim's runtime.json and linux.devices parsers (proxy/oci/runtime_config.h): what
// they accept, and that every mistake is a gdrproxy::Error naming the file and the key.
#include "proxy/oci/runtime_config.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "proxy/devices/device_catalog.h"

namespace gdrproxy::proxy {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_shim_config(text, "runtime.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(RuntimeConfig, AcceptsTheDocumentedKeys) {
  const ShimConfig c = parse_shim_config(
      R"({"version": 1, "runtime": "crun", "grants": ["uverbs*"], "sysfs": false, "rails": true,
          "rail_profile": "multirail", "rail_state_dir": "/run/gdrproxy"})",
      "runtime.json");
  EXPECT_TRUE(c.found);
  EXPECT_EQ(c.runtime, "crun");
  EXPECT_EQ(c.grants, std::vector<std::string>{"uverbs*"});
  EXPECT_FALSE(c.sysfs);
  EXPECT_TRUE(c.rails);
  EXPECT_EQ(c.rail_state_dir, "/run/gdrproxy");
}

// A version of another type was an exception of the JSON library's, not a refusal naming the
// key (found by runtime_config_fuzz).
TEST(RuntimeConfig, MistakesNameTheFileAndKey) {
  EXPECT_EQ(error_of(R"({"version": "1"})"), "runtime.json: version: expected 1");
  EXPECT_EQ(error_of(R"({"version": 1.5})"), "runtime.json: version: expected 1");
  EXPECT_EQ(error_of(R"({"grants": []})"), "runtime.json: version: expected 1");
  EXPECT_EQ(error_of(R"({"version": 1, "rails": "yes"})"),
            "runtime.json: rails: expected true or false");
  EXPECT_EQ(error_of(R"({"version": 1, "a\nb": 0})"), "runtime.json: a\\x0ab: unknown key");
  EXPECT_EQ(error_of("[]"), "runtime.json: not a JSON object");
}

TEST(RuntimeConfig, LsmJudgedGoesWithKernelAllow) {
  const ShimConfig c = parse_shim_config(
      R"({"version": 1, "kernel_allow": true, "lsm_judged": true})", "runtime.json");
  EXPECT_TRUE(c.kernel_allow);
  EXPECT_TRUE(c.lsm_judged);
  EXPECT_EQ(error_of(R"({"version": 1, "lsm_judged": true})"),
            "runtime.json: \"lsm_judged\" goes with \"kernel_allow\": true");
}

TEST(RuntimeConfig, NvidiaAbiAsNamesARelease) {
  EXPECT_FALSE(parse_shim_config(R"({"version": 1})", "runtime.json").nvidia_abi_as);
  EXPECT_EQ(parse_shim_config(R"({"version": 1, "nvidia_abi_as": "595.45.04"})", "runtime.json")
                .nvidia_abi_as,
            "595.45.04");
  EXPECT_EQ(error_of(R"({"version": 1, "nvidia_abi_as": 595})"),
            "runtime.json: nvidia_abi_as: expected a string");
  EXPECT_EQ(error_of(R"({"version": 1, "nvidia_abi_as": ""})"),
            "runtime.json: nvidia_abi_as: expected a driver release, e.g. \"595.45.04\"");
}

TEST(RuntimeConfig, LsmHookIsImpliedByLsmJudged) {
  ShimConfig c = parse_shim_config(R"({"version": 1})", "runtime.json");
  EXPECT_FALSE(c.lsm_hook);
  EXPECT_EQ(c.agent_ctl, "/run/gdrproxy/agent.ctl");
  c = parse_shim_config(R"({"version": 1, "lsm_hook": true, "agent_ctl": "/run/a.ctl"})",
                        "runtime.json");
  EXPECT_TRUE(c.lsm_hook);
  EXPECT_EQ(c.agent_ctl, "/run/a.ctl");
  c = parse_shim_config(R"({"version": 1, "kernel_allow": true, "lsm_judged": true})",
                        "runtime.json");
  EXPECT_TRUE(c.lsm_hook);
  EXPECT_EQ(error_of(R"({"version": 1, "lsm_hook": "yes"})"),
            "runtime.json: lsm_hook: expected true or false");
}

TEST(RuntimeConfig, DevicesOutsideTheCatalogAreNotOurs) {
  const DeviceCatalog none = DeviceCatalog::scan("/nonexistent", "/nonexistent", "/nonexistent");
  auto catalog = [&]() -> const DeviceCatalog& { return none; };
  EXPECT_TRUE(requested_devices(
                  R"({"linux": {"devices": [{"path": "/dev/null", "type": "c", "major": 1,
                      "minor": 3}]}})",
                  "config.json", catalog)
                  .empty());
  EXPECT_THROW(requested_devices("[1]", "config.json", catalog), Error);
}

// A pod's pause container asks for no device: its create must not pay for a scan of /dev. A
// spec with a character device entry looks it up, and a block device alone is not ours.
TEST(RuntimeConfig, TheCatalogIsScannedOnlyForASpecThatAsksForADevice) {
  const DeviceCatalog none = DeviceCatalog::scan("/nonexistent", "/nonexistent", "/nonexistent");
  int scans = 0;
  auto catalog = [&]() -> const DeviceCatalog& {
    ++scans;
    return none;
  };
  EXPECT_TRUE(requested_devices(R"({"linux": {"namespaces": [{"type": "network"}]}})",
                                "config.json", catalog)
                  .empty());
  EXPECT_TRUE(requested_devices(R"({"linux": {"devices": []}})", "config.json", catalog).empty());
  EXPECT_TRUE(requested_devices(R"({"linux": {"devices": [{"path": "/dev/sda", "type": "b",
                                    "major": 8, "minor": 0}]}})",
                                "config.json", catalog)
                  .empty());
  EXPECT_EQ(scans, 0);
  EXPECT_TRUE(requested_devices(R"({"linux": {"devices": [{"path": "/dev/null", "type": "c",
                                    "major": 1, "minor": 3}, {"path": "/dev/zero", "type": "c",
                                    "major": 1, "minor": 5}]}})",
                                "config.json", catalog)
                  .empty());
  EXPECT_GE(scans, 1);
}

}  // namespace
}  // namespace gdrproxy::proxy
