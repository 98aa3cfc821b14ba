// libFuzzer target for the caller-identity parser (parse_process_identity, the pure part of
// read_process_identity in base/process_info.cc). Both texts are the tenant's: it
// names its threads (comm) and, as root in its own namespaces, shapes what /proc shows.
//
// Input: byte 0 is the length of the comm text (clamped to what is there), then comm's bytes,
// then the text of /proc/<tid>/status.
//
// A bug is: any crash, sanitizer report or exception (the supervisor parses this for every new
// thread); comm other than exactly the given bytes minus one trailing newline; or, for a status
// text whose Tgid/NStgid/NSpid lines are well formed (tab/space separated decimal numbers of at
// most 9 digits), a field other than the last number of the last such line (0 when it has none).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include "base/process_info.h"
#include "tests/fuzz/fuzz_check.h"

using gdrproxy::fuzz::fail;

namespace {

// What a well-formed list of numbers must parse to; nullopt when `rest` is not well formed (then
// only "no crash, no throw" is checked for that field).
std::optional<uint32_t> expected_last_number(std::string_view rest) {
  uint32_t last = 0;
  size_t i = 0;
  while (i < rest.size()) {
    if (rest[i] == ' ' || rest[i] == '\t') {
      ++i;
      continue;
    }
    size_t j = i;
    uint32_t v = 0;
    while (j < rest.size() && rest[j] >= '0' && rest[j] <= '9') v = v * 10 + (rest[j++] - '0');
    if (j == i || j - i > 9) return std::nullopt;
    last = v;
    i = j;
  }
  return last;
}

// Follows the status text the way /proc's readers do: one line at a time, the last matching line
// of each key wins.
struct Expected {
  std::optional<uint32_t> tgid = 0, ns_tgid = 0, ns_tid = 0;
};

Expected expected_fields(std::string_view status) {
  Expected e;
  while (!status.empty()) {
    const size_t eol = status.find('\n');
    std::string_view line = status.substr(0, eol);
    status.remove_prefix(eol == std::string_view::npos ? status.size() : eol + 1);
    // strtoul stops at a NUL, the reference does not: such lines are not well formed.
    const bool has_nul = line.find('\0') != std::string_view::npos;
    auto take = [&](std::string_view key, std::optional<uint32_t>& field) {
      if (line.substr(0, key.size()) != key) return false;
      field = has_nul ? std::nullopt : expected_last_number(line.substr(key.size()));
      return true;
    };
    take("Tgid:", e.tgid) || take("NStgid:", e.ns_tgid) || take("NSpid:", e.ns_tid);
  }
  return e;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t comm_len = std::min<size_t>(data[0], size - 1);
  const std::string_view comm(reinterpret_cast<const char*>(data) + 1, comm_len);
  const std::string_view status(reinterpret_cast<const char*>(data) + 1 + comm_len,
                                size - 1 - comm_len);
  gdrproxy::ProcessIdentity id;
  try {
    id = gdrproxy::parse_process_identity(status, comm);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "identity_fuzz: threw %s\n", e.what());
    std::abort();
  } catch (...) {
    fail("threw a non-std exception");
  }

  std::string_view want = comm;
  if (!want.empty() && want.back() == '\n') want.remove_suffix(1);
  if (id.comm != want) fail("comm is not the given bytes minus one trailing newline");
  if (id.host_tid != 0 || id.pidns != 0) fail("fields that do not come from the texts were set");

  const Expected e = expected_fields(status);
  if (e.tgid && id.host_tgid != *e.tgid) fail("Tgid: not the last number of the last line");
  if (e.ns_tgid && id.ns_tgid != *e.ns_tgid) fail("NStgid: not the last number of the last line");
  if (e.ns_tid && id.ns_tid != *e.ns_tid) fail("NSpid: not the last number of the last line");
  return 0;
}
