// libFuzzer target for the container process state parser (parse_container_process_state,
// proxy/oci/container_state.h). The agent parses this for every connection to its listener
// socket, whoever made it: the JSON and the number of fds that came with it are the sender's.
//
// Input: byte 0 mod 4 is the number of fds that arrived, the rest is the JSON.
//
// A bug is: any crash, sanitizer report, hang or exception; a state accepted with the listener
// outside the fds that arrived (seccomp_fd_index >= fds_received, or its name not "seccompFd"),
// with "seccompFd" named twice or fds that arrived unnamed, with an empty container id or one
// longer than kMaxContainerIdBytes, with pid <= 0 or state.pid < 0; a refusal whose `why` is empty
// or not one line of bytes 0x20..0x7e (it goes to the operator's log and terminal as is).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/oci/container_state.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gdrproxy::proxy;
using gdrproxy::fuzz::fail;
using gdrproxy::fuzz::one_printable_line;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t fds_received = data[0] % 4;
  const std::string_view json(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string why;
  std::optional<ContainerProcessState> state;
  try {
    state = parse_container_process_state(json, fds_received, why);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "container_state_fuzz: threw %s\n", e.what());
    std::abort();
  } catch (...) {
    fail("threw a non-std exception");
  }

  if (!state) {
    if (!one_printable_line(why)) fail("a refusal's why is empty or not one printable line");
    return 0;
  }
  if (state->seccomp_fd_index >= fds_received) fail("the listener is not among the fds received");
  if (state->fd_names.size() != fds_received) fail("fds that arrived are not all named");
  if (state->fd_names[state->seccomp_fd_index] != kSeccompFdName)
    fail("the listener's fd is not the one named seccompFd");
  if (std::count(state->fd_names.begin(), state->fd_names.end(), kSeccompFdName) != 1)
    fail("seccompFd named more than once");
  if (state->state.id.empty() || state->state.id.size() > kMaxContainerIdBytes)
    fail("container id empty or longer than kMaxContainerIdBytes");
  if (state->pid <= 0) fail("pid <= 0 accepted");
  if (state->state.pid < 0) fail("state.pid < 0 accepted");
  return 0;
}
