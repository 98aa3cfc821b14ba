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

// A request to the holder.
struct HolderRequest {
  enum class Kind { kNone, kPut, kForget, kGet } kind = Kind::kNone;
  uint64_t key = 0;        // kForget: the entry named
  std::string state_json;  // kPut: the container process state kept with the fds
};

std::string put_request(std::string_view state_json);  // "PUT\n<json>"
std::string forget_request(uint64_t key);              // "FORGET <key>\n"
std::string get_request();                             // "GET\n"
// "PUT\n<json>", "FORGET <decimal key, 1..2^64-1>\n" or "GET\n"; anything else is kNone.
HolderRequest parse_holder_request(std::string_view packet);

// An entry the holder sends back: "<key>\n<json>"; a holder of an older build sent the JSON
// alone (no key: nullopt).
struct HolderEntry {
  std::optional<uint64_t> key;
  std::string state_json;
};

std::string holder_entry(uint64_t key, std::string_view state_json);
HolderEntry parse_holder_entry(std::string_view packet);

}  // namespace gdrproxy::proxy
