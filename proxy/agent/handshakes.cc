// See handshakes.h. A connection is in `pending_` from its accept until it is finished, timed out
// or evicted; its handlers hold it alive and do nothing once it has left the table, so closing
// it is erasing it (the socket's close cancels what waits on it).
#include "proxy/agent/handshakes.h"

#include <sys/socket.h>

#include <boost/asio/write.hpp>
#include <cerrno>
#include <exception>
#include <utility>

namespace gdrproxy::proxy {

namespace asio = boost::asio;
using local = asio::local::stream_protocol;

struct Handshakes::Conn {
  Conn(uint64_t s, local::socket so, Reader r, GiveUp g)
      : seq(s),
        socket(std::move(so)),
        timer(socket.get_executor()),
        read(std::move(r)),
        give_up(std::move(g)) {}
  uint64_t seq;
  local::socket socket;
  asio::steady_timer timer;
  Reader read;
  GiveUp give_up;
  std::string answer;
  bool answering = false;
};

Handshakes::Handshakes(std::chrono::milliseconds deadline, size_t cap)
    : deadline_(deadline), cap_(cap > 0 ? cap : 1) {}

Handshakes::~Handshakes() {
  for (auto& [seq, c] : pending_) {
    boost::system::error_code ec;
    c->socket.close(ec);
    c->timer.cancel();
  }
}

void Handshakes::add(local::socket socket, Reader read, GiveUp give_up) {
  while (pending_.size() >= cap_) {
    const std::shared_ptr<Conn> oldest = pending_.begin()->second;
    close(oldest->seq);
    oldest->give_up("closed unfinished to make room: " + std::to_string(cap_) +
                    " connections were being read, this one the longest");
  }
  auto c = std::make_shared<Conn>(next_++, std::move(socket), std::move(read), std::move(give_up));
  pending_.emplace(c->seq, c);
  c->timer.expires_after(deadline_);
  c->timer.async_wait([this, c](const boost::system::error_code& ec) {
    if (ec || !pending_.contains(c->seq)) return;
    close(c->seq);
    c->give_up(std::string(c->answering ? "its answer not taken" : "not finished") + " within " +
               std::to_string(deadline_.count()) + " ms: closed");
  });
  // Read at once what the peer has sent already (a runtime writes its whole state before we
  // accept it): it is then in our hands without a turn of the loop.
  read_now(c);
}

void Handshakes::wait_readable(const std::shared_ptr<Conn>& c) {
  c->socket.async_wait(local::socket::wait_read, [this, c](const boost::system::error_code& ec) {
    if (!pending_.contains(c->seq)) return;
    if (ec) {
      close(c->seq);
      c->give_up("waiting for it failed: " + ec.message());
      return;
    }
    read_now(c);
  });
}

void Handshakes::read_now(const std::shared_ptr<Conn>& c) {
  std::optional<std::string> answer;
  try {
    answer = c->read(c->socket.native_handle());
  } catch (const std::exception& e) {
    close(c->seq);
    c->give_up(std::string("internal error: ") + e.what());
    return;
  }
  if (!answer) {
    wait_readable(c);
    return;
  }
  if (answer->empty()) {
    close(c->seq);
    return;
  }
  c->answer = std::move(*answer);
  c->answering = true;
  write_answer(c);
}

// Sent at once as far as the socket takes it (a short answer entirely, so that one given just
// before the loop stops still reaches its peer); the rest asynchronously, under the same
// deadline: a peer that does not read cannot hold the loop either.
void Handshakes::write_answer(const std::shared_ptr<Conn>& c) {
  const ssize_t n = ::send(c->socket.native_handle(), c->answer.data(), c->answer.size(),
                           MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
    close(c->seq);
    return;
  }
  if (n > 0) c->answer.erase(0, static_cast<size_t>(n));
  if (c->answer.empty()) {
    close(c->seq);
    return;
  }
  asio::async_write(c->socket, asio::buffer(c->answer),
                    [this, c](const boost::system::error_code&, size_t) {
                      if (pending_.contains(c->seq)) close(c->seq);
                    });
}

void Handshakes::close(uint64_t seq) {
  const auto it = pending_.find(seq);
  if (it == pending_.end()) return;
  const std::shared_ptr<Conn> c = it->second;
  pending_.erase(it);
  boost::system::error_code ec;
  c->socket.close(ec);
  c->timer.cancel();
}

}  // namespace gdrproxy::proxy
