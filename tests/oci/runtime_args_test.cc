// The runtime shim's reading of the runtime command line containerd-shim-runc-v2, Docker and
// podman give it, and the refusal line it writes where containerd reads the runtime's errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "proxy/oci/runtime_shim.h"

namespace gdrproxy::proxy {
namespace {

TEST(RuntimeArgs, ContainerdShimsCreateIsRead) {
  // What containerd-shim-runc-v2 runs (containerd 1.6, Docker 20.10).
  const RuntimeCall c = parse_runtime_args(
      {"--root", "/run/docker/runtime-runc/moby", "--log", "/run/x/log.json", "--log-format",
       "json", "--systemd-cgroup", "create", "--bundle", "/run/x", "--pid-file", "/run/x/init.pid",
       "--console-socket", "/tmp/pty.sock", "abc"});
  EXPECT_EQ(c.verb, "create");
  EXPECT_EQ(c.bundle, "/run/x");
  EXPECT_EQ(c.log_path, "/run/x/log.json");
  EXPECT_EQ(c.log_format, "json");
  EXPECT_EQ(c.pid_file, "/run/x/init.pid");
  EXPECT_EQ(c.id, "abc");
  // "=" forms, and no --log at all.
  const RuntimeCall d = parse_runtime_args({"--log=/l", "--log-format=text", "start", "abc"});
  EXPECT_EQ(d.verb, "start");
  EXPECT_EQ(d.log_path, "/l");
  EXPECT_EQ(d.log_format, "text");
  EXPECT_EQ(d.id, "abc");
  EXPECT_EQ(d.pid_file, "");
  EXPECT_EQ(parse_runtime_args({"--debug", "state", "abc"}).log_path, "");
  EXPECT_EQ(parse_runtime_args({"create", "--pid-file=/p", "--bundle", "/b", "x"}).pid_file, "/p");
  // A verb with no id names none.
  EXPECT_EQ(parse_runtime_args({"--root", "/r", "list"}).id, "");
}

TEST(RuntimeArgs, RefusalIsARuncLogLine) {
  const std::string msg = "gdrproxy runtime: the container asks for device \"uverbs0\"";
  const auto j = nlohmann::json::parse(runtime_log_line("json", msg, "2026-11-27T00:00:00Z"));
  EXPECT_EQ(j["level"], "error");
  EXPECT_EQ(j["msg"], msg);
  EXPECT_EQ(j["time"], "2026-11-27T00:00:00Z");
  EXPECT_EQ(runtime_log_line("text", "a \"b\"", "T"),
            "time=\"T\" level=error msg=\"a \\\"b\\\"\"\n");
}

// Any bytes make a log line, never an exception (found by runtime_config_fuzz).
TEST(RuntimeArgs, LogLineOfBytesThatAreNotUtf8) {
  const std::string line = runtime_log_line("json", "bad \x86 byte", "T");
  EXPECT_EQ(nlohmann::json::parse(line)["msg"], "bad \xef\xbf\xbd byte");
  EXPECT_EQ(runtime_log_line("text", "\xff", "T"), "time=\"T\" level=error msg=\"\xef\xbf\xbd\"\n");
}

}  // namespace
// A second runtime handler is a link gdrproxy-runtime-NAME reading runtime-NAME.json beside the
// plain link's file; other names are not the shim's (no path can be smuggled in by the name).
TEST(RuntimeArgs, ASuffixedLinkReadsItsOwnFileBesideThePlainOne) {
  EXPECT_TRUE(is_shim_link_suffix(""));
  EXPECT_TRUE(is_shim_link_suffix("-rails"));
  EXPECT_TRUE(is_shim_link_suffix("-gpu_2.a"));
  EXPECT_FALSE(is_shim_link_suffix("-"));
  EXPECT_FALSE(is_shim_link_suffix("rails"));
  EXPECT_FALSE(is_shim_link_suffix("-a/../b"));
  EXPECT_FALSE(is_shim_link_suffix("-a b"));
  EXPECT_EQ(suffixed_shim_config("/etc/gdrproxy/runtime.json", "-rails"),
            "/etc/gdrproxy/runtime-rails.json");
  EXPECT_EQ(suffixed_shim_config("/srv/conf/node.json", "-rails"), "/srv/conf/runtime-rails.json");
  EXPECT_EQ(suffixed_shim_config("runtime.json", "-x"), "./runtime-x.json");
}

}  // namespace gdrproxy::proxy
