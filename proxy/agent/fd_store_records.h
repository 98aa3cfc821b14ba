// The fd store's packets as bytes (the protocol is in fd_store.h): what the holder reads from the
// agent and what the agent reads back from the holder, apart from the sockets and fds that carry
// them. The idea not to miss: a parse takes any bytes and never throws; a packet that is not
// exactly one of the forms below is of no kind, and the holder ignores it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gdrproxy::proxy {

// The file a runtime socket's path named when the agent bound it (lstat's st_dev and st_ino): a
// kept socket is used again only while its path still names that file.
struct SocketName {
  uint64_t dev = 0;
  uint64_t ino = 0;
  bool operator==(const SocketName&) const = default;
};

// A request to the holder.
struct HolderRequest {
  enum class Kind {
    kNone,
    kPut,
    kForget,
    kGet,
    kSocket,
    kSocketQuery,
    kConn,
    kSubscribe
  } kind = Kind::kNone;
  uint64_t key = 0;        // kForget: the entry named; kPut: the connection it replaces, or 0
  std::string state_json;  // kPut: the container process state kept with the fds
  SocketName socket;       // kSocket: the path's file the runtime socket is bound to
};

// "PUT\n<json>"; "PUT <replaces>\n<json>" when the state was read from connection entry
// <replaces> (the holder drops that connection as it keeps the entry: never both, never neither).
std::string put_request(std::string_view state_json, uint64_t replaces = 0);
std::string conn_request();                   // "CONN\n"
std::string subscribe_request();              // "SUBSCRIBE\n"
std::string forget_request(uint64_t key);     // "FORGET <key>\n"
std::string get_request();                    // "GET\n"
std::string socket_request(SocketName name);  // "SOCKET <dev> <ino>\n"
std::string socket_query();                   // "SOCKET?\n"
// "PUT\n<json>", "PUT <key>\n<json>", "FORGET <key>\n" (a key: decimal, 1..2^64-1), "GET\n",
// "SOCKET <dev> <ino>\n" (decimal, 0..2^64-1), "SOCKET?\n", "CONN\n" or "SUBSCRIBE\n"; anything
// else is kNone.
HolderRequest parse_holder_request(std::string_view packet);

// The holder's answer to a PUT or a CONN: "KEPT <key>\n", the name to FORGET the entry by. A
// holder of an older build answers nothing (and closes the connection).
std::string put_answer(uint64_t key);
std::optional<uint64_t> parse_put_answer(std::string_view packet);

// The holder's answer to "SUBSCRIBE": "SERVING <n>\n", n (decimal, 0..2^64-1) the connections
// it kept from before, sent next.
std::string serving_answer(uint64_t kept);
std::optional<uint64_t> parse_serving_answer(std::string_view packet);

// The holder's answer to "SOCKET?": the socket request it was given (with the socket), or
// "NONE\n" when it keeps none; parse_holder_request reads the former.
std::string no_socket_answer();

// An entry the holder sends back: "<key>\n<json>" (a listener); "CONN <key>\n" (a runtime's
// connection, its state still unread in it); a holder of an older build sent the JSON alone (no
// key: nullopt).
struct HolderEntry {
  std::optional<uint64_t> key;
  bool connection = false;
  std::string state_json;
};

std::string holder_entry(uint64_t key, std::string_view state_json);
std::string holder_conn_entry(uint64_t key);
HolderEntry parse_holder_entry(std::string_view packet);

}  // namespace gdrproxy::proxy
