// libFuzzer target for what the rail hooks read on stdin: the runtime's state of a container
// (parse_runtime_state, proxy/oci/container_state.h), and the file name its id gets for the
// hook's state directory (container_file_name). The state is written by the runtime, but its id
// is whatever the container's creator chose.
//
// Input: the state JSON; a second id to name follows the first 0x00 byte, if any.
//
// A bug is: any crash, sanitizer report, hang or exception; an accepted state with an empty id,
// one longer than kMaxContainerIdBytes or a negative pid; a refusal whose `why` is empty or not one
// line of bytes 0x20..0x7e; a file name that is empty, ".", "..", holds '/' or NUL, is longer than
// 170 bytes, differs for the same id, or is the same for two different ids.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/oci/container_state.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gdrproxy::proxy;
using gdrproxy::fuzz::fail;
using gdrproxy::fuzz::one_printable_line;

namespace {

void check_name(const std::string& id) {
  const std::string n = container_file_name(id);
  if (n.empty() || n == "." || n == ".." || n.find('/') != std::string::npos ||
      n.find('\0') != std::string::npos || n.size() > 170)
    fail("not a usable file name");
  if (container_file_name(id) != n) fail("two names for one id");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  const std::string_view json = in.substr(0, nul);
  std::string why;
  std::optional<ContainerProcessState::RuntimeState> st;
  try {
    st = parse_runtime_state(json, why);
  } catch (...) {
    fail("threw");
  }
  std::string id;
  if (st) {
    if (st->id.empty() || st->id.size() > kMaxContainerIdBytes) fail("id empty or too long");
    if (st->pid < 0) fail("negative pid accepted");
    id = st->id;
  } else {
    if (!one_printable_line(why)) fail("a refusal's why is empty or not one printable line");
    id = std::string(json);
  }
  check_name(id);
  if (nul != std::string_view::npos) {
    const std::string other(in.substr(nul + 1));
    check_name(other);
    if (other != id && container_file_name(other) == container_file_name(id))
      fail("two ids share a file name");
  }
  return 0;
}
