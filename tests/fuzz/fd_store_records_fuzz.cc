// libFuzzer target for the fd store's packets (proxy/agent/fd_store_records.h): the requests the
// holder reads and the entries the next agent reads back, which carry each container's listener
// across an agent restart.
//
// Input: bytes 0..7 a key (little-endian), the rest a packet, which is also used as a state.
//
// A bug is: any crash, sanitizer report, hang or exception; a request or entry parsed from bytes
// that are not exactly its canonical form (a FORGET whose key is read from "FORGET 012\n" or
// "FORGET 1x\n" could drop another entry); a request or entry that does not come back as itself
// (put, replacing put, conn, forget, get and socket requests, put answers, and listener and
// connection entries with any key 1..2^64-1 and any state bytes).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "proxy/agent/fd_store_records.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gdrproxy::proxy;
using gdrproxy::fuzz::fail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  uint64_t key;
  std::memcpy(&key, data, 8);
  const std::string_view packet(reinterpret_cast<const char*>(data) + 8, size - 8);
  try {
    // Whatever arrives parses only from its canonical bytes.
    const HolderRequest r = parse_holder_request(packet);
    switch (r.kind) {
      case HolderRequest::Kind::kPut:
        if (put_request(r.state_json, r.key) != packet) fail("a put parsed from other bytes");
        break;
      case HolderRequest::Kind::kConn:
        if (conn_request() != packet) fail("a conn request parsed from other bytes");
        break;
      case HolderRequest::Kind::kSubscribe:
        if (subscribe_request() != packet) fail("a subscribe request parsed from other bytes");
        break;
      case HolderRequest::Kind::kForget:
        if (r.key == 0 || forget_request(r.key) != packet) fail("a forget parsed from other bytes");
        break;
      case HolderRequest::Kind::kGet:
        if (get_request() != packet) fail("a get parsed from other bytes");
        break;
      case HolderRequest::Kind::kSocket:
        if (socket_request(r.socket) != packet) fail("a socket request parsed from other bytes");
        break;
      case HolderRequest::Kind::kSocketQuery:
        if (socket_query() != packet) fail("a socket query parsed from other bytes");
        break;
      case HolderRequest::Kind::kNone:
        break;
    }
    if (const auto k = parse_put_answer(packet); k && (*k == 0 || put_answer(*k) != packet))
      fail("a put answer parsed from other bytes");
    if (const auto n = parse_serving_answer(packet); n && serving_answer(*n) != packet)
      fail("a serving answer parsed from other bytes");
    if (parse_serving_answer(serving_answer(key)) != key) fail("serving answer round trip");
    if (parse_holder_request(subscribe_request()).kind != HolderRequest::Kind::kSubscribe)
      fail("subscribe");
    const HolderEntry e = parse_holder_entry(packet);
    if (e.connection ? (!e.key || *e.key == 0 || holder_conn_entry(*e.key) != packet)
        : e.key      ? (*e.key == 0 || holder_entry(*e.key, e.state_json) != packet)
                     : e.state_json != packet)
      fail("an entry parsed from other bytes");
    // What is sent comes back as itself.
    const HolderRequest put = parse_holder_request(put_request(packet));
    if (put.kind != HolderRequest::Kind::kPut || put.key != 0 || put.state_json != packet)
      fail("put round trip");
    if (parse_holder_request(conn_request()).kind != HolderRequest::Kind::kConn) fail("conn");
    if (parse_holder_request(get_request()).kind != HolderRequest::Kind::kGet) fail("get");
    // Any device and inode number (the key and its byte-swap stand in for them).
    const SocketName name{key, __builtin_bswap64(key)};
    const HolderRequest sr = parse_holder_request(socket_request(name));
    if (sr.kind != HolderRequest::Kind::kSocket || !(sr.socket == name)) fail("socket round trip");
    if (parse_holder_request(socket_query()).kind != HolderRequest::Kind::kSocketQuery)
      fail("socket query");
    if (parse_holder_request(no_socket_answer()).kind != HolderRequest::Kind::kNone)
      fail("no-socket answer taken as a request");
    if (key != 0) {
      if (parse_put_answer(put_answer(key)) != key) fail("put answer round trip");
      const HolderRequest f = parse_holder_request(forget_request(key));
      if (f.kind != HolderRequest::Kind::kForget || f.key != key) fail("forget round trip");
      const HolderEntry back = parse_holder_entry(holder_entry(key, packet));
      if (back.key != key || back.connection || back.state_json != packet) fail("entry round trip");
      const HolderEntry conn = parse_holder_entry(holder_conn_entry(key));
      if (conn.key != key || !conn.connection) fail("conn entry round trip");
      const HolderRequest rp = parse_holder_request(put_request(packet, key));
      if (rp.kind != HolderRequest::Kind::kPut || rp.key != key || rp.state_json != packet)
        fail("replacing put round trip");
    }
  } catch (...) {
    fail("threw");
  }
  return 0;
}
