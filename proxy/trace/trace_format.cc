// Text lines read like strace: who, device, call(args) = result {outputs} <latency>. The tenant's
// comm is escaped here; paths it spelled arrive already quoted (quote_text), and everything else
// passes through printable(), so a record is always one printable line. (JSON lines:
// json_format.cc.)
#include <cstdio>

#include "base/escape.h"
#include "proxy/abi/errno_names.h"
#include "proxy/trace/trace_record.h"

namespace gdrproxy::proxy {

std::string format_text(const TraceRecord& r) {
  std::string s;
  char head[128];
  std::snprintf(head, sizeof head, "[pid %u ns %u pidns %llu %s] ", r.who.host_tid, r.who.ns_tid,
                static_cast<unsigned long long>(r.who.pidns), escape_text(r.who.comm).c_str());
  s += head;
  s += r.device.empty() ? "?" : printable(r.device);
  s += ' ';
  s += r.syscall;
  s += ' ';
  s += printable(r.call.name);
  s += '(';
  for (size_t i = 0; i < r.call.args.size(); ++i) {
    if (i) s += ", ";
    s += printable(r.call.args[i].name) + "=" + printable(r.call.args[i].value);
  }
  s += ')';
  if (!r.call.malformed.empty()) s += " <malformed: " + printable(r.call.malformed) + ">";
  if (r.ret) {
    s += " = " + std::to_string(*r.ret);
    if (r.err) s += std::string(" ") + errno_name(r.err) + " (" + errno_meaning(r.err) + ")";
  } else {
    s += " = ?";
  }
  if (!r.out.empty()) {
    s += " {";
    for (size_t i = 0; i < r.out.size(); ++i) {
      if (i) s += ", ";
      s += printable(r.out[i].name) + "=" + printable(r.out[i].value);
    }
    s += '}';
  }
  if (r.decision == "deny") s += " [denied: " + printable(r.reason) + "]";
  if (!r.note.empty()) s += " [" + printable(r.note) + "]";
  if (r.latency_us) {
    char lat[32];
    std::snprintf(lat, sizeof lat, " <%.1fus>", *r.latency_us);
    s += lat;
  }
  return s;
}

}  // namespace gdrproxy::proxy
