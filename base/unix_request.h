// One request over a unix stream socket and its answer: a line out, everything up to the end of
// the stream back (`gdrproxy agent ctl`, and the `gdrproxy hook judge` a runtime runs, ask the
// agent's control socket this way). The idea not to miss: the whole exchange, connect included,
// runs under one deadline, so a peer that does not answer cannot hold the caller (a runtime's
// hook) longer than that.
#pragma once

#include <string>

namespace gdrproxy {

// Sends `line` (a newline is added) to the socket at `path` and returns the answer (may be
// empty). `peer` names the socket in errors ("the agent's control socket"). Throws
// gdrproxy::Error when nothing listens there ("nothing answers at <peer> PATH: ...") or it does not
// answer within `timeout_ms`.
std::string ask_unix_socket(const std::string& path, const std::string& peer,
                            const std::string& line, int timeout_ms);

}  // namespace gdrproxy
