// libFuzzer target for the agent's config (AgentConfig::from_json_text, proxy/agent/
// agent_config.h) and the rule lookup every container goes through (rule_for). The file is the
// operator's, but it is written by hand or by tools, and the ids, bundles and metadata it is
// matched against are whatever the runtimes report.
//
// Input: up to the first 0x00 byte the config text, the rest three NUL-separated strings: the
// container id, bundle and metadata to look up.
//
// A bug is: any crash, sanitizer report or hang (the globs are matched against reported names;
// a matcher exponential in the number of '*' would hang); an exception other than gdrproxy::Error,
// or one whose message is not one line of bytes 0x20..0x7e (it goes to the operator's terminal);
// an accepted config whose default rule grants nothing undecided (nullopt), a rule without its
// origin, or a lookup that returns a rule not of this config, or a rule whose literal id (no '*')
// differs from the id looked up.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/error.h"
#include "proxy/agent/agent_config.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gdrproxy::proxy;
using gdrproxy::fuzz::fail;
using gdrproxy::fuzz::one_printable_line;

namespace {

// The next NUL-terminated piece of `rest`.
std::string take(std::string_view& rest) {
  const size_t end = rest.find('\0');
  std::string out(rest.substr(0, end));
  rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::string text = take(in), id = take(in), bundle = take(in), metadata = take(in);
  AgentConfig c;
  try {
    c = AgentConfig::from_json_text(text, "agent.json");
  } catch (const gdrproxy::Error& e) {
    if (!one_printable_line(e.what())) {
      std::fprintf(stderr, "message: %s\n", e.what());
      fail("an error message is not one printable line");
    }
    return 0;
  } catch (...) {
    fail("threw something other than gdrproxy::Error");
  }
  if (!c.fallback.grants) fail("the default rule leaves the grants undecided");
  if (c.fallback.origin.empty()) fail("the default rule has no origin");
  for (const ContainerRule& r : c.containers)
    if (r.origin.empty()) fail("a rule has no origin");
  const ContainerRule& r = c.rule_for(id, bundle, metadata);
  bool ours = &r == &c.fallback;
  for (const ContainerRule& k : c.containers) ours = ours || &r == &k;
  if (!ours) fail("rule_for returned a rule not of this config");
  if (r.id && r.id->find('*') == std::string::npos && *r.id != id)
    fail("a rule with a literal id matched another id");
  return 0;
}
