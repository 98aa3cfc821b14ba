// A trace record as one JSON line, written straight into a string: no document tree, so the
// writer's thread formats a record with one or two allocations instead of one per field (the
// tree cost more than the rest of a traced call on small machines). The idea not to miss: the
// output is what a JSON library would write for the same record (keys in sorted order, objects
// with unique keys, the last value of a repeated name winning, non-finite numbers as null), and a
// tenant's bytes that are not UTF-8 are replaced with U+FFFD, so a line is always valid JSON.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/abi/errno_names.h"
#include "proxy/trace/trace_record.h"

namespace gdrproxy::proxy {
namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 when the bytes there are not one (overlong
// forms, surrogates, code points past U+10FFFF and truncated sequences are not).
size_t utf8_sequence(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

void put_string(std::string& o, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  o += '"';
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t n = utf8_sequence(s, i);
      if (n == 0) {
        o += "\xEF\xBF\xBD";  // U+FFFD for the one byte that starts no valid sequence
        ++i;
      } else {
        o.append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"':
        o += "\\\"";
        break;
      case '\\':
        o += "\\\\";
        break;
      case '\b':
        o += "\\b";
        break;
      case '\f':
        o += "\\f";
        break;
      case '\n':
        o += "\\n";
        break;
      case '\r':
        o += "\\r";
        break;
      case '\t':
        o += "\\t";
        break;
      default:
        if (c < 0x20) {
          o += "\\u00";
          o += kHex[c >> 4];
          o += kHex[c & 0xF];
        } else {
          o += static_cast<char>(c);
        }
    }
    ++i;
  }
  o += '"';
}

template <typename Int>
void put_int(std::string& o, Int v) {
  char buf[24];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  o.append(buf, res.ptr);
}

// The shortest form that reads back as the same double, with a fraction or exponent always
// (3.0, not 3); null where JSON has no number for it.
void put_double(std::string& o, double v) {
  if (!std::isfinite(v)) {
    o += "null";
    return;
  }
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  const std::string_view s(buf, static_cast<size_t>(res.ptr - buf));
  o += s;
  if (s.find_first_of(".e") == std::string_view::npos) o += ".0";
}

// Writes an object's members: each key is preceded by the comma its place needs.
class ObjectWriter {
 public:
  explicit ObjectWriter(std::string& o) : o_(o) { o_ += '{'; }
  // Starts the member `key` and returns the string its value goes into.
  std::string& key(std::string_view key) {
    if (!first_) o_ += ',';
    first_ = false;
    put_string(o_, key);
    o_ += ':';
    return o_;
  }
  void close() { o_ += '}'; }

 private:
  std::string& o_;
  bool first_ = true;
};

// An object of name/value strings: sorted by name, a repeated name keeping its last value.
void put_fields(std::string& o, const std::vector<DecodedField>& fields) {
  std::vector<const DecodedField*> order;
  order.reserve(fields.size());
  for (const DecodedField& f : fields) order.push_back(&f);
  std::stable_sort(order.begin(), order.end(),
                   [](const DecodedField* a, const DecodedField* b) { return a->name < b->name; });
  ObjectWriter obj(o);
  for (size_t i = 0; i < order.size(); ++i) {
    if (i + 1 < order.size() && order[i + 1]->name == order[i]->name) continue;  // a later one
    put_string(obj.key(order[i]->name), order[i]->value);
  }
  obj.close();
}

}  // namespace

std::string format_json(const TraceRecord& r) {
  std::string o;
  o.reserve(512);
  ObjectWriter j(o);
  const auto put_null = [](std::string& to) { to += "null"; };
  // Keys in sorted order, as before this writer (a std::map-backed document wrote them so).
  put_fields(j.key("args"), r.call.args);
  put_string(j.key("call"), r.call.name);
  put_int(j.key("cmd"), r.call.cmd);
  put_string(j.key("comm"), r.who.comm);
  put_string(j.key("decision"), r.decision);
  put_string(j.key("device"), r.device);
  put_string(j.key("device_class"), device_class_name(r.call.device_class));
  if (r.err)
    put_string(j.key("errno"), errno_name(r.err));
  else
    put_null(j.key("errno"));
  put_int(j.key("fd"), r.fd);
  if (r.latency_us)
    put_double(j.key("latency_us"), *r.latency_us);
  else
    put_null(j.key("latency_us"));
  if (!r.call.malformed.empty()) put_string(j.key("malformed"), r.call.malformed);
  if (!r.note.empty()) put_string(j.key("note"), r.note);
  put_int(j.key("nspid"), r.who.ns_tid);
  put_fields(j.key("out"), r.out);
  put_int(j.key("pid"), r.who.host_tid);
  put_int(j.key("pidns"), r.who.pidns);
  if (r.ret)
    put_int(j.key("result"), *r.ret);
  else
    put_null(j.key("result"));
  if (!r.reason.empty()) put_string(j.key("rule"), r.reason);
  put_int(j.key("seq"), r.seq);
  put_string(j.key("syscall"), r.syscall);
  put_int(j.key("tgid"), r.who.host_tgid);
  put_double(j.key("time"), r.wall_time);
  j.close();
  return o;
}

}  // namespace gdrproxy::proxy
