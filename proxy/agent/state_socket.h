// Receiving one container process state on a connection to the agent's listenerPath socket: the
// OCI runtime connects, sends one JSON document (possibly over several sendmsg() calls, its fds
// with the first) and closes. The peer is not trusted: it may never close, send without end, or
// attach fds where the protocol has none. On every path but success each fd that arrived is
// closed before returning, and no peer holds the caller past its deadline.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "base/unique_fd.h"

namespace gdrproxy::proxy {

// Runtimes send a few hundred bytes; a larger state is refused.
inline constexpr size_t kMaxStateBytes = 64 * 1024;
// The most fds one state may carry (runtimes send one, "seccompFd"); more is refused.
inline constexpr size_t kMaxStateFds = 16;

struct ReceivedState {
  std::string json;
  // In SCM_RIGHTS order, close-on-exec. The caller owns them.
  std::vector<int> fds;
};

// What has arrived so far on one connection, read without ever waiting: the agent's loop calls
// read_available() each time the connection is readable, so one slow peer holds nothing but its
// own connection (its deadline is the caller's, runtime_intake.cc's handshakes). The rules are
// those of receive_container_state() below.
class StateReader {
 public:
  // `leave_in_socket`: peek instead of read (MSG_PEEK from offset 0, SO_PEEK_OFF), so that the
  // state and its fds stay queued in the connection for another reader should this one die (the
  // fd store keeps a copy of the connection meanwhile: fd_store.h). kMore then means nothing is
  // there beyond what was peeked, though the connection stays readable.
  explicit StateReader(bool leave_in_socket = false) : leave_in_socket_(leave_in_socket) {}
  enum class Step { kMore, kDone, kFailed };
  // Reads everything `conn_fd` has now (recvmsg with MSG_DONTWAIT). kMore: wait until it is
  // readable again; kDone: take() the state; kFailed: `why` is one line and every fd that
  // arrived is closed.
  Step read_available(int conn_fd, std::string& why);
  // After kDone: the state and its fds (the caller owns them).
  ReceivedState take();
  size_t bytes() const { return json_.size(); }
  bool leaves_in_socket() const { return leave_in_socket_; }

 private:
  bool leave_in_socket_;
  bool peek_offset_set_ = false;
  // One read takes up to a whole state, so that a peek never stops inside a message and
  // returns its fds twice.
  std::vector<char> chunk_;
  std::string json_;
  // fds received and not yet handed on: closed with the reader.
  std::vector<UniqueFd> fds_;
  bool fds_arrived_ = false;
};

// Reads `conn_fd` (an accepted AF_UNIX SOCK_STREAM connection) until the peer closes it, or
// until what arrived, with its fds, is one complete JSON document (crun keeps the connection
// open after sending). The fds
// are those of the first read that carries any: the kernel may hand over several sendmsg()s'
// bytes in one read, so "the first message" is the first read with fds. fds arriving with a
// later read are closed and refused, as are more than kMaxStateFds fds (MSG_CTRUNC) and more
// than kMaxStateBytes bytes. Gives up when the peer has not closed within `timeout_ms` (> 0) of
// the call, however it trickles its bytes. On failure returns false with every fd that arrived
// closed, `why` one line, and `out` untouched; on success fills `out`.
bool receive_container_state(int conn_fd, ReceivedState& out, std::string& why, int timeout_ms);

// The connecting process's pid, uid and gid as the kernel recorded them at connect()
// (SO_PEERCRED), translated into the caller's namespaces (pid 0 when the peer's pid namespace is
// not the caller's or below it); nullopt when getsockopt fails (`conn_fd` is not a UNIX socket).
std::optional<ucred> peer_credentials(int conn_fd);

}  // namespace gdrproxy::proxy
