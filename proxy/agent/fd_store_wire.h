// How the agent's fd-store client and its holder talk (the protocol is in fd_store.h): one
// SOCK_SEQPACKET packet a record, with at most three fds in it. The idea not to miss: a record and
// its fds always arrive in one packet, so an entry's fds can never be taken for another's; a
// packet that was cut (MSG_TRUNC, MSG_CTRUNC) is refused whole.
#pragma once

#include <sys/un.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "base/unique_fd.h"
#include "proxy/agent/fd_store_records.h"

namespace gdrproxy::proxy::fd_wire {

constexpr size_t kMaxPacket = 70 * 1024;
constexpr size_t kFdsPerEntry = 3;  // listener, pidfd, received-id page

sockaddr_un address_of(const std::string& path);
// A connection to the holder at `path`; empty when none listens there.
UniqueFd connect_to(const std::string& path);
// One packet with up to kFdsPerEntry fds (none where negative, and none after one).
bool send_packet(int s, const std::string& data, std::array<int, kFdsPerEntry> fds = {-1, -1, -1});
// One packet and its fds (in order; the others empty); false at EOF, on error or after
// `timeout_ms`.
bool recv_packet(int s, std::string& data, std::array<UniqueFd, kFdsPerEntry>& fds, int timeout_ms);
// One request to the holder at `path` with `fds`, and its answer (with the fds that came with it)
// within 2 s: the connection, still open (a subscription reads on), or empty when no holder
// answered (none runs; an older one closes the connection on a request it does not know).
UniqueFd ask(const std::string& path, const std::string& request,
             const std::array<int, kFdsPerEntry>& fds, std::string& answer,
             std::array<UniqueFd, kFdsPerEntry>& answer_fds);
// A listening AF_UNIX stream socket (what the agent's runtime socket is).
bool is_listening_stream(const UniqueFd& fd);
// The file `path` names now; nullopt when it names none.
std::optional<SocketName> name_of(const std::string& path);

}  // namespace gdrproxy::proxy::fd_wire
