// libFuzzer target for what the runtime shim reads besides its command line: the operator's
// runtime.json (parse_shim_config) and the bundle's config.json, whose linux.devices name the
// devices a container asks for (requested_devices, proxy/oci/runtime_config.h), and the runtime
// command line containerd or podman passes (parse_runtime_args) with the refusal line the shim
// writes to the runtime's log (runtime_log_line). The config.json comes from the engine, which
// writes what the container's creator asked for.
//
// Input: NUL-separated: runtime.json, config.json, then the runtime's arguments.
//
// A bug is: any crash, sanitizer report or hang; an exception other than gdrproxy::Error; an
// accepted runtime.json whose version is not 1; a requested device that is not a grantable node
// of the catalog; a log line that is not one line ending in '\n', or (--log-format json) not a
// JSON object with its "msg" (bytes that are not UTF-8 become U+FFFD in it).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "proxy/devices/device_catalog.h"
#include "proxy/oci/runtime_config.h"
#include "proxy/oci/runtime_shim.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gdrproxy::proxy;
using gdrproxy::fuzz::fail;

namespace {

std::string take(std::string_view& rest) {
  const size_t end = rest.find('\0');
  std::string out(rest.substr(0, end));
  rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
  return out;
}

// This host's devices, read once: linux.devices entries are looked up in them.
const DeviceCatalog& catalog() {
  static const DeviceCatalog c = DeviceCatalog::scan();
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::string runtime_json = take(in), config_json = take(in);
  std::vector<std::string> args;
  while (!in.empty() && args.size() < 64) args.push_back(take(in));
  try {
    (void)parse_shim_config(runtime_json, "runtime.json");
  } catch (const gdrproxy::Error&) {
  } catch (...) {
    fail("runtime.json: threw something other than gdrproxy::Error");
  }
  try {
    for (const std::string& name : requested_devices(config_json, "config.json", catalog)) {
      const DeviceNode* n = catalog().find_by_name(name);
      if (!n || !n->brokerable) fail("a requested device is not a grantable node");
    }
  } catch (const gdrproxy::Error&) {
  } catch (...) {
    fail("config.json: threw something other than gdrproxy::Error");
  }
  try {
    const RuntimeCall call = parse_runtime_args(args);
    const std::string msg = "gdrproxy runtime: refused: " + call.verb + " " + call.bundle;
    const std::string line = runtime_log_line(call.log_format, msg, "2026-11-27T00:00:00Z");
    if (line.empty() || line.back() != '\n' || line.find('\n') != line.size() - 1)
      fail("a log line is not one line");
    if (call.log_format == "json") {
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_object() || !j.contains("msg")) fail("a JSON log line does not hold msg");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "threw: %s\n", e.what());
    fail("the command line or its log line threw");
  } catch (...) {
    fail("the command line or its log line threw");
  }
  return 0;
}
