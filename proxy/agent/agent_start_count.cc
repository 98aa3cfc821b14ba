// The agent's own start count (see agent_start_count.h).
#include "proxy/agent/agent_start_count.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <optional>

#include "base/owned_dir.h"

namespace gdrproxy::proxy {

AgentStarts record_agent_start(const std::string& dir) {
  AgentStarts out;
  const UniqueFd dfd = open_owned_dir(dir);
  if (!dfd) {
    out.note = dir + " is not a directory of ours that only we may write: restarts are not counted";
    return out;
  }
  // "N\n", N at most 20 digits; a missing file is a first start.
  const std::optional<std::string> text = read_owned_entry(dfd.get(), kAgentStartsFile, 22);
  if (text) {
    uint64_t n = 0;
    const char* end = text->data() + text->size();
    const auto [p, ec] = std::from_chars(text->data(), end, n);
    if (ec == std::errc() && p != text->data() && p + 1 == end && *p == '\n')
      out.before = n;
    else
      out.note = std::string(kAgentStartsFile) + " in " + dir +
                 " does not hold a count: restarts are counted from this start";
  } else if (::faccessat(dfd.get(), kAgentStartsFile, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
    out.note = std::string(kAgentStartsFile) + " in " + dir +
               " is not a regular file of ours: restarts are counted from this start";
  }
  if (!replace_owned_entry(dfd.get(), kAgentStartsFile, std::to_string(out.before + 1) + "\n"))
    out.note = "cannot write " + std::string(kAgentStartsFile) + " in " + dir +
               ": the next start will not count this one";
  return out;
}

}  // namespace gdrproxy::proxy
