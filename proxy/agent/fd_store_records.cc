// The fd store's packets (see fd_store_records.h).
#include "proxy/agent/fd_store_records.h"

#include <charconv>

namespace gdrproxy::proxy {
namespace {

// A whole decimal key, 1..2^64-1, without sign, spaces or leading zeros.
std::optional<uint64_t> parse_key(std::string_view s) {
  if (s.empty() || s[0] == '0') return std::nullopt;
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// A whole decimal number, 0..2^64-1, in its canonical form ("0" alone may start with 0).
std::optional<uint64_t> parse_number(std::string_view s) {
  if (s == "0") return 0;
  return parse_key(s);
}

}  // namespace

std::string put_request(std::string_view state_json, uint64_t replaces) {
  return (replaces != 0 ? "PUT " + std::to_string(replaces) + "\n" : std::string("PUT\n")) +
         std::string(state_json);
}

std::string conn_request() {
  return "CONN\n";
}

std::string subscribe_request() {
  return "SUBSCRIBE\n";
}

std::string serving_answer(uint64_t kept) {
  return "SERVING " + std::to_string(kept) + "\n";
}

std::optional<uint64_t> parse_serving_answer(std::string_view packet) {
  if (packet.substr(0, 8) != "SERVING " || packet.size() < 10 || packet.back() != '\n')
    return std::nullopt;
  return parse_number(packet.substr(8, packet.size() - 9));
}

std::string forget_request(uint64_t key) {
  return "FORGET " + std::to_string(key) + "\n";
}

std::string get_request() {
  return "GET\n";
}

std::string socket_request(SocketName name) {
  return "SOCKET " + std::to_string(name.dev) + " " + std::to_string(name.ino) + "\n";
}

std::string socket_query() {
  return "SOCKET?\n";
}

std::string put_answer(uint64_t key) {
  return "KEPT " + std::to_string(key) + "\n";
}

std::optional<uint64_t> parse_put_answer(std::string_view packet) {
  if (packet.substr(0, 5) != "KEPT " || packet.size() < 7 || packet.back() != '\n')
    return std::nullopt;
  return parse_key(packet.substr(5, packet.size() - 6));
}

std::string no_socket_answer() {
  return "NONE\n";
}

HolderRequest parse_holder_request(std::string_view packet) {
  HolderRequest r;
  if (packet == "SOCKET?\n") {
    r.kind = HolderRequest::Kind::kSocketQuery;
  } else if (packet.substr(0, 7) == "SOCKET " && packet.size() > 8 && packet.back() == '\n') {
    const std::string_view rest = packet.substr(7, packet.size() - 8);
    const size_t sp = rest.find(' ');
    if (sp != std::string_view::npos) {
      const auto dev = parse_number(rest.substr(0, sp));
      const auto ino = parse_number(rest.substr(sp + 1));
      if (dev && ino) {
        r.kind = HolderRequest::Kind::kSocket;
        r.socket = SocketName{*dev, *ino};
      }
    }
  } else if (packet.substr(0, 4) == "PUT\n") {
    r.kind = HolderRequest::Kind::kPut;
    r.state_json = packet.substr(4);
  } else if (packet.substr(0, 4) == "PUT ") {
    const size_t nl = packet.find('\n');
    if (nl != std::string_view::npos) {
      if (const auto key = parse_key(packet.substr(4, nl - 4))) {
        r.kind = HolderRequest::Kind::kPut;
        r.key = *key;
        r.state_json = packet.substr(nl + 1);
      }
    }
  } else if (packet == "CONN\n") {
    r.kind = HolderRequest::Kind::kConn;
  } else if (packet == "SUBSCRIBE\n") {
    r.kind = HolderRequest::Kind::kSubscribe;
  } else if (packet == "GET\n") {
    r.kind = HolderRequest::Kind::kGet;
  } else if (packet.substr(0, 7) == "FORGET " && packet.size() > 8 && packet.back() == '\n') {
    if (const auto key = parse_key(packet.substr(7, packet.size() - 8))) {
      r.kind = HolderRequest::Kind::kForget;
      r.key = *key;
    }
  }
  return r;
}

std::string holder_entry(uint64_t key, std::string_view state_json) {
  return std::to_string(key) + "\n" + std::string(state_json);
}

std::string holder_conn_entry(uint64_t key) {
  return "CONN " + std::to_string(key) + "\n";
}

HolderEntry parse_holder_entry(std::string_view packet) {
  HolderEntry e;
  if (packet.substr(0, 5) == "CONN " && packet.size() > 6 && packet.back() == '\n') {
    if (const auto key = parse_key(packet.substr(5, packet.size() - 6))) {
      e.key = key;
      e.connection = true;
      return e;
    }
  }
  const size_t nl = packet.find('\n');
  if (nl != std::string_view::npos) e.key = parse_key(packet.substr(0, nl));
  e.state_json = e.key ? packet.substr(nl + 1) : packet;
  return e;
}

}  // namespace gdrproxy::proxy
