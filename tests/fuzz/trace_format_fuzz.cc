// libFuzzer target for everything that prints tenant bytes: escape_text, quote_text and
// printable (base/escape.h), and format_text/format_json (proxy/trace/trace_record.h) on a
// trace record whose strings (comm, device, call name, arguments, outputs, malformed, reason,
// note) and numbers all come from the input (FuzzedDataProvider). The tenant chooses its comm and
// its paths; the decoders render bytes from its memory.
//
// A bug is: any crash, sanitizer report or exception (the supervisor formats a record for every
// traced call); a text line holding a byte outside 0x20..0x7e (a newline forges a trace line, an
// escape sequence rewrites the operator's terminal); a JSON record that nlohmann::json::accept
// refuses, or that loses a string which was valid UTF-8; escape_text that is not reversible (the
// strace-style escapes must decode back to exactly the input); quote_text other than "escape";
// printable() changing a string that was printable already.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/escape.h"
#include "proxy/trace/trace_record.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gdrproxy::proxy;
using gdrproxy::escape_text;
using gdrproxy::printable;
using gdrproxy::quote_text;
using gdrproxy::fuzz::fail;

namespace {

bool printable_ascii(const std::string& s) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Decodes escape_text's output strictly; nullopt on anything escape_text never writes.
std::optional<std::string> unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"') return std::nullopt;  // always escaped
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    if (++i == s.size()) return std::nullopt;
    switch (s[i]) {
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case '"':
      case '\\':
        out += s[i];
        break;
      case 'x': {
        if (i + 2 >= s.size()) return std::nullopt;
        const int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        break;
      }
      default:
        return std::nullopt;
    }
  }
  return out;
}

bool valid_utf8(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();  // strict: throws on invalid UTF-8
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

void check_escapes(const std::string& s) {
  const std::string e = escape_text(s);
  if (!printable_ascii(e)) fail("escape_text wrote a byte outside 0x20..0x7e");
  const auto back = unescape(e);
  if (!back || *back != s) fail("escape_text is not reversible");
  if (quote_text(s) != "\"" + e + "\"") fail("quote_text is not the quoted escape_text");
  const std::string p = printable(s);
  if (!printable_ascii(p)) fail("printable wrote a byte outside 0x20..0x7e");
  if (printable_ascii(s) && p != s) fail("printable changed a printable string");
}

std::string str(FuzzedDataProvider& in, size_t max) {
  return in.ConsumeRandomLengthString(max);
}

DecodedField field(FuzzedDataProvider& in) {
  DecodedField f;
  f.name = str(in, 32);
  f.value = str(in, 128);
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  TraceRecord r;
  r.who.comm = str(in, 64);
  r.device = str(in, 256);
  r.call.name = str(in, 64);
  for (size_t n = in.ConsumeIntegralInRange<size_t>(0, 8); n > 0; --n)
    r.call.args.push_back(field(in));
  r.call.malformed = str(in, 64);
  r.reason = str(in, 128);
  r.note = str(in, 64);
  for (size_t n = in.ConsumeIntegralInRange<size_t>(0, 4); n > 0; --n) r.out.push_back(field(in));
  // Our own strings: chosen from what the supervisor writes.
  r.syscall = in.PickValueInArray({"ioctl", "open", "openat", "openat2", "creat", "write"});
  r.decision = in.PickValueInArray({"allow", "deny", "broker", "pass", "undecidable"});
  r.call.device_class = static_cast<DeviceClass>(in.ConsumeIntegralInRange<int>(0, 5));
  r.call.cmd = in.ConsumeIntegral<uint32_t>();
  r.seq = in.ConsumeIntegral<uint64_t>();
  r.wall_time = in.ConsumeFloatingPoint<double>();
  r.who.host_tid = in.ConsumeIntegral<uint32_t>();
  r.who.host_tgid = in.ConsumeIntegral<uint32_t>();
  r.who.ns_tid = in.ConsumeIntegral<uint32_t>();
  r.who.ns_tgid = in.ConsumeIntegral<uint32_t>();
  r.who.pidns = in.ConsumeIntegral<uint64_t>();
  r.fd = in.ConsumeIntegral<int>();
  if (in.ConsumeBool()) r.ret = in.ConsumeIntegral<int64_t>();
  r.err = in.ConsumeIntegral<int>();
  if (in.ConsumeBool()) r.latency_us = in.ConsumeFloatingPoint<double>();

  try {
    for (const std::string* s : {&r.who.comm, &r.device, &r.call.name, &r.reason, &r.note})
      check_escapes(*s);

    const std::string text = format_text(r);
    if (!printable_ascii(text)) fail("format_text wrote a byte outside 0x20..0x7e");

    const std::string json = format_json(r);
    if (!nlohmann::json::accept(json)) fail("format_json wrote invalid JSON");
    const auto j = nlohmann::json::parse(json);
    if (j.at("seq") != r.seq || j.at("pid") != r.who.host_tid || j.at("fd") != r.fd)
      fail("format_json changed a number");
    // Strings that were valid UTF-8 come back unchanged.
    if (valid_utf8(r.who.comm) && j.at("comm") != r.who.comm) fail("format_json changed comm");
    if (valid_utf8(r.device) && j.at("device") != r.device) fail("format_json changed device");
    if (valid_utf8(r.note) && !r.note.empty() && j.at("note") != r.note)
      fail("format_json changed note");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trace_format_fuzz: threw %s\n", e.what());
    std::abort();
  }
  return 0;
}
