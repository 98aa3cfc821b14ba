// The connections the agent is still reading (a runtime handing over a listener, a `ctl`
// command), each served asynchronously on the loop with one total deadline, however its peer
// trickles its bytes, and at most `cap` at a time. The idea not to miss: no peer can hold the
// loop, and a flood of idle connections cannot starve a real one. When the table is full the
// oldest pending connection is closed to make room, so the newest (the runtime that just
// connected) is always read; an idle one lasts at most the deadline.
#pragma once

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace gdrproxy::proxy {

class Handshakes {
 public:
  // Called once when the connection is added and then each time it is readable: reads what is
  // there without waiting. nullopt:
  // wait for more; a string: done, that answer (may be empty) is written, then it is closed.
  using Reader = std::function<std::optional<std::string>(int fd)>;
  // Called once when the connection is closed unfinished: `why` is one line.
  using GiveUp = std::function<void(const std::string& why)>;

  Handshakes(std::chrono::milliseconds deadline, size_t cap);
  ~Handshakes();
  Handshakes(const Handshakes&) = delete;
  Handshakes& operator=(const Handshakes&) = delete;

  // Takes `socket` over; `read` and `give_up` run on the loop. `peeks`: `read` leaves what it
  // read queued (MSG_PEEK), so the socket stays readable: while bytes are queued, "wait for
  // more" is a short sleep rather than a wait for readability, which would return at once.
  void add(boost::asio::local::stream_protocol::socket socket, Reader read, GiveUp give_up,
           bool peeks = false);
  size_t pending() const { return pending_.size(); }

 private:
  struct Conn;
  void wait_for_more(const std::shared_ptr<Conn>& c);
  void read_now(const std::shared_ptr<Conn>& c);
  void write_answer(const std::shared_ptr<Conn>& c);
  void close(uint64_t seq);

  const std::chrono::milliseconds deadline_;
  const size_t cap_;
  uint64_t next_ = 0;
  std::map<uint64_t, std::shared_ptr<Conn>> pending_;  // oldest first
};

}  // namespace gdrproxy::proxy
