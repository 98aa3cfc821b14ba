// See handshakes.h. A connection is in `pending_` from its accept until it is finished, timed out
// or evicted; its handlers hold it alive and do nothing once it has left the table, so closing
// it is erasing it (the socket's close cancels what waits on it).
#include "proxy/agent/handshakes.h"

#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <boost/asio/write.hpp>
#include <cerrno>
#include <exception>
#include <utility>

namespace gdrproxy::proxy {

namespace asio = boost::asio;
using local = asio::local::stream_protocol;

// How long a peeking reader sleeps before it looks again when part of a state is queued.
constexpr std::chrono::milliseconds kNap{2};

struct Handshakes::Conn {
  Conn(uint64_t s, local::socket so, Reader r, GiveUp g, bool p)
      : seq(s),
        socket(std::move(so)),
        timer(socket.get_executor()),
        nap(socket.get_executor()),
        read(std::move(r)),
        give_up(std::move(g)),
        peeks(p) {}
  uint64_t seq;
  local::socket socket;
  asio::steady_timer timer;  // the deadline
  asio::steady_timer nap;    // a peeking reader's wait for more
  Reader read;
  GiveUp give_up;
  bool peeks;
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
    c->nap.cancel();
  }
}

void Handshakes::add(local::socket socket, Reader read, GiveUp give_up, bool peeks) {
  while (pending_.size() >= cap_) {
    const std::shared_ptr<Conn> oldest = pending_.begin()->second;
    close(oldest->seq);
    oldest->give_up("closed unfinished to make room: " + std::to_string(cap_) +
                    " connections were being read, this one the longest");
  }
  auto c = std::make_shared<Conn>(next_++, std::move(socket), std::move(read), std::move(give_up),
                                  peeks);
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

void Handshakes::wait_for_more(const std::shared_ptr<Conn>& c) {
  int queued = 0;
  if (c->peeks && ::ioctl(c->socket.native_handle(), SIOCINQ, &queued) == 0 && queued > 0) {
    // Only a runtime that sends its state in pieces with pauses between them comes here.
    c->nap.expires_after(kNap);
    c->nap.async_wait([this, c](const boost::system::error_code& ec) {
      if (!ec && pending_.contains(c->seq)) read_now(c);
    });
    return;
  }
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
    wait_for_more(c);
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
  c->nap.cancel();
}

}  // namespace gdrproxy::proxy
